//! What this process did to a queue, counted, and the queue's row counts as last read:
//! together they make the [`Stats`] the pool, the diagnosis and metrics read.
//!
//! A part of the store (`store.rs`): each counter is written by the task or call that did
//! the work (relaxed adds), the row counts (`gauges`) by the keeper's counts (`keeper.rs`),
//! the upkeep's flags and tallies by the upkeep (`upkeep.rs`); read by stats reads
//! (`Counters::stats`), the empty wait (`receive.rs`), the upkeep's trigger and
//! `PgStore::upkeep`. A leaf.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use leaseq_core::{Stats, Timestamp};
use parking_lot::Mutex;

/// Counters of this process's operations (the database keeps items, not history).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) pushed: AtomicU64,
    pub(crate) rejected: AtomicU64,
    pub(crate) delivered: AtomicU64,
    pub(crate) redelivered: AtomicU64,
    pub(crate) acked: AtomicU64,
    pub(crate) dead_lettered: AtomicU64,
    pub(crate) expired: AtomicU64,
    pub(crate) lease_expired: AtomicU64,
    pub(crate) late_acks_stale: AtomicU64,
    pub(crate) late_acks_unclaimed: AtomicU64,
    pub(crate) unknown_receipts: AtomicU64,
    pub(crate) extends: AtomicU64,
    pub(crate) extends_capped: AtomicU64,
    pub(crate) nacks: AtomicU64,
    pub(crate) redriven: AtomicU64,
    pub(crate) cancelled: AtomicU64,
    pub(crate) put_back: AtomicU64,
    /// Uncounted snoozes (`snooze.rs`).
    pub(crate) snoozed: AtomicU64,
    /// Keyed pushes refused for a held key.
    pub(crate) duplicates: AtomicU64,
    /// Waiting items replaced by a `replace_pending` push.
    pub(crate) replaced: AtomicU64,
    /// Rows this process removed since its last `VACUUM`.
    pub(crate) removed_since_vacuum: AtomicU64,
    /// A `VACUUM` started by this process is running.
    pub(crate) vacuuming: std::sync::atomic::AtomicBool,
    /// `VACUUM`s of the items table this process ran.
    pub(crate) vacuums: AtomicU64,
    /// Indexes of the items table this process rebuilt.
    pub(crate) reindexes: AtomicU64,
    /// The upkeep found it may not maintain the table and said so (once per process).
    pub(crate) upkeep_refused: std::sync::atomic::AtomicBool,
    /// The row counts of the queue as last read.
    pub(crate) gauges: Mutex<Gauges>,
}

/// The queue's rows by state, as last counted (all processes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Gauges {
    pub(crate) ready: u64,
    pub(crate) delayed: u64,
    pub(crate) in_flight: u64,
    pub(crate) dead: u64,
    /// Whether the queue was paused (`pause.rs`).
    pub(crate) paused: bool,
    /// How many of this process's pushes were committed before the count began (the
    /// count includes those; later ones may be missing from it).
    pub(crate) pushes_seen: u64,
    /// When the count's statement was sent, on the queue's clock (`None`: not counted yet).
    pub(crate) counted_at: Option<Timestamp>,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }

    /// The stats: this process's counters and the last row counts.
    pub(crate) fn stats(&self) -> Stats {
        let g = *self.gauges.lock();
        let mut s = Stats::default();
        s.ready = g.ready;
        s.delayed = g.delayed;
        s.in_flight = g.in_flight;
        s.dead = g.dead;
        s.paused = g.paused;
        s.pushed = self.pushed.load(Relaxed);
        s.rejected = self.rejected.load(Relaxed);
        s.delivered = self.delivered.load(Relaxed);
        s.redelivered = self.redelivered.load(Relaxed);
        s.acked = self.acked.load(Relaxed);
        s.dead_lettered = self.dead_lettered.load(Relaxed);
        s.expired = self.expired.load(Relaxed);
        s.lease_expired = self.lease_expired.load(Relaxed);
        s.late_acks_stale = self.late_acks_stale.load(Relaxed);
        s.late_acks_unclaimed = self.late_acks_unclaimed.load(Relaxed);
        s.unknown_receipts = self.unknown_receipts.load(Relaxed);
        s.extends = self.extends.load(Relaxed);
        s.extends_capped = self.extends_capped.load(Relaxed);
        s.nacks = self.nacks.load(Relaxed);
        s.redriven = self.redriven.load(Relaxed);
        s.cancelled = self.cancelled.load(Relaxed);
        s.put_back = self.put_back.load(Relaxed);
        s.snoozed = self.snoozed.load(Relaxed);
        s.duplicates = self.duplicates.load(Relaxed);
        s.replaced = self.replaced.load(Relaxed);
        s
    }
}
