//! The in-memory store's record of finished jobs (off unless
//! [`QueueBuilder::retention`](crate::QueueBuilder::retention) asks for it): entries kept in
//! their own lock beside the queue's, removed by age on the driver's wake.
//!
//! Acks and cancels are recorded after the queue's lock, from the item the core handed out
//! (its kind read there); dead letters (a last failed attempt, a lease run out, an expiry)
//! from the ids the core notes (`Queue::note_dead_letters`), read under the queue's lock
//! where the letter lies (its kind read there: see RELIABILITY.md).

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use leaseq_core::{DeadLetter, MessageId, Reason, Timestamp};
use parking_lot::Mutex;

use crate::history::{FinishOutcome, Finished, HistoryQuery};

/// How an item names its kind (its `ItemKind`).
pub(crate) type KindOf<T> = fn(&T) -> Option<&str>;

/// The record and what it needs to fill entries in.
pub(crate) struct History<T> {
    window: Duration,
    kind_of: Option<KindOf<T>>,
    /// The wall-clock time of the runtime's `Timestamp::ZERO`.
    wall_zero: SystemTime,
    log: Mutex<Log>,
}

#[derive(Default)]
struct Log {
    next_seq: u64,
    /// Entries in the order they were written, with the runtime's time of their finish.
    entries: VecDeque<(Timestamp, Finished)>,
}

impl<T> History<T> {
    pub(crate) fn new(window: Duration, kind_of: Option<KindOf<T>>, now: Timestamp) -> Self {
        let wall_zero = SystemTime::now()
            .checked_sub(now.as_duration())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        History {
            window,
            kind_of,
            wall_zero,
            log: Mutex::new(Log::default()),
        }
    }

    /// The kind of `item`, if kinds are read.
    pub(crate) fn kind(&self, item: &T) -> Option<String> {
        self.kind_of.and_then(|of| of(item)).map(str::to_owned)
    }

    /// Writes an entry finished at `at`; `true` when the record was empty (the driver must
    /// re-arm for its removal).
    pub(crate) fn record(&self, at: Timestamp, entry: Entry) -> bool {
        let mut log = self.log.lock();
        let was_empty = log.entries.is_empty();
        log.next_seq += 1;
        let mut f = Finished::new(
            log.next_seq,
            entry.id,
            entry.outcome,
            entry.attempts,
            self.wall_zero + at.as_duration(),
        );
        f.kind = entry.kind;
        f.reason = entry.reason;
        f.last_error = entry.last_error;
        log.entries.push_back((at, f));
        was_empty
    }

    /// An entry for the dead letter `letter`.
    pub(crate) fn buried(&self, letter: &DeadLetter<T>) -> Entry {
        Entry {
            id: letter.id,
            outcome: if letter.reason == Reason::Expired {
                FinishOutcome::Expired
            } else {
                FinishOutcome::DeadLettered
            },
            attempts: letter.attempts,
            reason: Some(letter.reason),
            last_error: letter.last_error.clone(),
            kind: self.kind(&letter.item),
        }
    }

    /// Removes the entries whose window has passed at `now`; when the oldest left goes
    /// (`Timestamp::MAX`: none left).
    pub(crate) fn remove_old(&self, now: Timestamp) -> Timestamp {
        let mut log = self.log.lock();
        while let Some((at, _)) = log.entries.front() {
            let due = at.saturating_add(self.window);
            if due > now {
                return due;
            }
            log.entries.pop_front();
        }
        Timestamp::MAX
    }

    /// The entries `query` asks for, oldest first.
    pub(crate) fn read(&self, query: &HistoryQuery) -> Vec<Finished> {
        let log = self.log.lock();
        let after = query.after.unwrap_or(0);
        // Entries are in seq order: start past `after`.
        let start = log.entries.partition_point(|(_, f)| f.seq <= after);
        log.entries
            .range(start..)
            .map(|(_, f)| f)
            .filter(|f| query.outcome.is_none_or(|o| o == f.outcome))
            .filter(|f| query.kind.is_none() || f.kind == query.kind)
            .take(query.limit)
            .cloned()
            .collect()
    }
}

/// What one finish recorded (the times are the record's).
pub(crate) struct Entry {
    pub(crate) id: MessageId,
    pub(crate) outcome: FinishOutcome,
    pub(crate) attempts: u32,
    pub(crate) reason: Option<Reason>,
    pub(crate) last_error: Option<String>,
    pub(crate) kind: Option<String>,
}

impl Entry {
    /// An ack or a cancel of an item of `kind`.
    pub(crate) fn plain(
        id: MessageId,
        outcome: FinishOutcome,
        attempts: u32,
        kind: Option<String>,
    ) -> Self {
        Entry {
            id,
            outcome,
            attempts,
            reason: None,
            last_error: None,
            kind,
        }
    }
}
