//! The durable facts the store queues for its writer to commit ([`Op`]).

use leaseq_async::ScheduleState;
use leaseq_core::{FlowKeys, LimitScope, Rate};

/// One durable fact about an item.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    /// Pushed.
    Insert {
        id: u64,
        payload: Vec<u8>,
        visible_at: i64,
        expires_at: Option<i64>,
        priority: u8,
        key: Option<Vec<u8>>,
        /// Its flow keys, if it was pushed with any (`flow.rs`).
        flow: Option<FlowKeys>,
        /// Its key's window, if not `Live` (`windows.rs`).
        window: Option<RowWindow>,
    },
    /// A keyed push took `key` (`windows.rs`): no other live row holds it, no gone entry.
    KeyTaken { id: u64, key: Vec<u8> },
    /// The item leaves at `at`: its key kept for its window's rest (`windows.rs`).
    KeepWindow { id: u64, at: i64 },
    /// Leased: its attempt is counted before the delivery is handed out.
    Taken { id: u64, attempts: u32 },
    /// A lease given back unstarted: its attempt taken back (`attempts` is the count before
    /// that lease), no longer leased.
    PutBack { id: u64, attempts: u32 },
    /// Handed back, to be delivered again from `visible_at`.
    Retry {
        id: u64,
        attempts: u32,
        visible_at: i64,
        error: Option<String>,
    },
    /// Dead-lettered.
    Dead {
        id: u64,
        attempts: u32,
        reason: u8,
        error: Option<String>,
        at: i64,
    },
    /// Acked, cancelled, replaced or a dead letter taken: gone for good.
    Delete { id: u64 },
    /// Snoozed: its attempt taken back (`attempts` is the count before that lease),
    /// visible again from `visible_at`, its uncounted snoozes so far (`snooze.rs`).
    Snoozed {
        id: u64,
        attempts: u32,
        visible_at: i64,
        snoozes: u32,
    },
    /// A dead letter redriven: visible at once, attempts reset.
    Revive { id: u64, visible_at: i64 },
    /// A handler's checkpoint (its row keeps it until deleted).
    Progress { id: u64, progress: Vec<u8> },
    /// A schedule's state after a committed step (`schedule.rs`): not an item's fact.
    Schedule(ScheduleState),
    /// The queue paused (`true`) or resumed (`pause.rs`): not an item's fact.
    Paused(bool),
    /// A concurrency limit set or removed (`flow.rs`): not an item's fact.
    Limit(LimitScope, Option<u32>),
    /// A rate limit set or removed (`flow.rs`): not an item's fact.
    Rate(LimitScope, Option<Rate>),
    /// The record's entry of an item finished at `at` with `outcome` (a `FinishOutcome`
    /// code), read from its row (`history.rs`): before the ack's or cancel's delete, after
    /// the dead letter's update, in the same commit.
    Finished { id: u64, outcome: u8, at: i64 },
    /// The record's entries that finished before `before` removed (the store's upkeep).
    Prune { before: i64 },
    /// A node of the dependency graph: its record and payload encoded (`graph.rs`), or
    /// `None`, removed (forgotten). Not an item's fact.
    Graph {
        node: u64,
        row: Option<(Vec<u8>, Option<Vec<u8>>)>,
    },
}

impl Op {
    /// The entry of a dead letter buried for reason `reason` (a code) at `at`: expired or
    /// dead-lettered.
    pub(crate) fn finished_dead(id: u64, reason: u8, at: i64) -> Op {
        let outcome = if reason == leaseq_core::Reason::Expired.code() {
            leaseq_async::FinishOutcome::Expired
        } else {
            leaseq_async::FinishOutcome::DeadLettered
        };
        Op::Finished {
            id,
            outcome: outcome.code(),
            at,
        }
    }
}

impl Op {
    pub(crate) fn id(&self) -> u64 {
        match self {
            Op::Insert { id, .. }
            | Op::Taken { id, .. }
            | Op::PutBack { id, .. }
            | Op::Retry { id, .. }
            | Op::Dead { id, .. }
            | Op::Delete { id }
            | Op::Revive { id, .. }
            | Op::Snoozed { id, .. }
            | Op::KeepWindow { id, .. }
            | Op::Progress { id, .. }
            | Op::Finished { id, .. } => *id,
            // Never waits for an insert (its `apply` always writes its row).
            Op::Schedule(_)
            | Op::KeyTaken { .. }
            | Op::Paused(_)
            | Op::Limit(..)
            | Op::Rate(..)
            | Op::Prune { .. }
            | Op::Graph { .. } => u64::MAX,
        }
    }
}

/// A live item's key window as its row keeps it (`windows.rs`): kind (1 queued, 2 a period after the push, 3
/// live then a period), the period in nanoseconds, the push's wall-clock time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowWindow {
    pub(crate) kind: u8,
    pub(crate) ns: i64,
    pub(crate) pushed_at: i64,
}
