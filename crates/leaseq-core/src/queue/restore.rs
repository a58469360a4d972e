//! Restoring a queue from a durable store: live items and dead letters put back as they
//! were recorded, under their own ids.

use alloc::string::String;
use core::fmt;

use super::{Queue, KEYED, LEVEL_BITS};
use crate::dead_letter::DeadLetter;
use crate::event::Reason;
use crate::id::MessageId;
use crate::key::UniqueKey;
use crate::outcome::MAX_PRIORITY;
use crate::time::Timestamp;

/// A live item as a durable store recorded it, to put back with [`Queue::restore`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restored<T> {
    /// Its id (restored ids must increase: see [`Queue::restore`]).
    pub id: MessageId,
    /// The item.
    pub item: T,
    /// Deliveries it had (its next delivery is attempt `attempts + 1`).
    pub attempts: u32,
    /// When it becomes visible (a time not after `now` means at once).
    pub visible_at: Timestamp,
    /// Its own deadline, if it was pushed with one.
    pub expires_at: Option<Timestamp>,
    /// Its priority level (at most [`MAX_PRIORITY`](crate::MAX_PRIORITY)).
    pub priority: u8,
    /// Its unique key, if any.
    pub key: Option<UniqueKey>,
    /// The error its last attempt recorded, if any.
    pub last_error: Option<String>,
}

/// A dead letter as a durable store recorded it, to put back with
/// [`Queue::restore_dead_letter`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoredDeadLetter<T> {
    /// Its id (restored ids must increase: see [`Queue::restore`]).
    pub id: MessageId,
    /// The item.
    pub item: T,
    /// Deliveries it had.
    pub attempts: u32,
    /// Why it was dead-lettered.
    pub reason: Reason,
    /// The last error recorded, if any.
    pub last_error: Option<String>,
    /// When it was dead-lettered.
    pub at: Timestamp,
    /// Its own deadline, if it was pushed with one.
    pub expires_at: Option<Timestamp>,
    /// Its priority level (at most [`MAX_PRIORITY`](crate::MAX_PRIORITY)).
    pub priority: u8,
    /// Its unique key, if any.
    pub key: Option<UniqueKey>,
}

/// Why a restore was refused (the queue is left as it was).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RestoreError {
    /// The id is not above every id pushed or restored so far (ids must be unique and
    /// restored in increasing order).
    IdOutOfOrder(MessageId),
    /// The priority level is above [`MAX_PRIORITY`](crate::MAX_PRIORITY).
    PriorityOutOfRange {
        /// The item.
        id: MessageId,
        /// The level given.
        level: u8,
    },
    /// A live item restored before holds the same unique key.
    KeyTaken {
        /// The item.
        id: MessageId,
        /// The item that holds the key.
        holder: MessageId,
    },
    /// The queue is at capacity (or out of slots).
    Full(MessageId),
}

impl fmt::Display for RestoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RestoreError::IdOutOfOrder(id) => {
                write!(f, "restored id {id} is not above every id before it")
            }
            RestoreError::PriorityOutOfRange { id, level } => write!(
                f,
                "restored item {id} has priority level {level}, above {MAX_PRIORITY}"
            ),
            RestoreError::KeyTaken { id, holder } => {
                write!(f, "restored item {id} has a unique key item {holder} holds")
            }
            RestoreError::Full(id) => write!(f, "no room to restore item {id}"),
        }
    }
}

impl core::error::Error for RestoreError {}

impl<T> Queue<T> {
    /// Puts back a live item a durable store recorded: ready if `visible_at` is not after
    /// `now`, delayed until then otherwise, with its attempts, expiry, level, key and last
    /// error. Counted in [`Stats::restored`](crate::Stats::restored), not as pushed (an
    /// earlier run pushed it). The next push gets an id above it.
    ///
    /// Refused, the queue unchanged, when its id is not above every id pushed or restored
    /// before ([`RestoreError::IdOutOfOrder`]: restore in id order, live items and dead
    /// letters interleaved), its level is out of range, a live item holds its key, or the
    /// queue is full.
    pub fn restore(&mut self, r: Restored<T>, now: Timestamp) -> Result<(), RestoreError> {
        let now = self.advance(now);
        let key = self.check_restore(r.id, r.priority, r.key.as_ref(), true)?;
        let expires_at = r.expires_at.unwrap_or(Timestamp::MAX);
        let meta = (r.priority & LEVEL_BITS) | if key.is_some() { KEYED } else { 0 };
        let slot = self.occupy(r.item, r.id.0, expires_at, r.attempts, r.attempts, meta);
        if let Some((k, hash)) = key {
            self.keys.insert(slot as u32, &k, hash);
        }
        if let Some(error) = r.last_error {
            self.set_error(slot, error);
        }
        self.stats.restored += 1;
        self.next_id = r.id.0 + 1;
        self.make_visible(slot, r.visible_at, now);
        Ok(())
    }

    /// Puts back a dead letter a durable store recorded, with its reason, error and time.
    /// Counted in [`Stats::restored_dead`](crate::Stats::restored_dead) and the `dead` gauge,
    /// not as pushed or dead-lettered (an earlier run did both), nor in
    /// [`dead_lettered_by`](Self::dead_lettered_by). Refused as [`restore`](Self::restore) is
    /// (but never for capacity, nor for its key: a dead letter's key is free).
    pub fn restore_dead_letter(&mut self, r: RestoredDeadLetter<T>) -> Result<(), RestoreError> {
        self.check_restore(r.id, r.priority, None, false)?;
        self.dead.insert(
            r.id,
            DeadLetter {
                item: r.item,
                id: r.id,
                attempts: r.attempts,
                reason: r.reason,
                last_error: r.last_error,
                at: r.at,
                expires_at: r.expires_at,
                priority: r.priority,
                key: r.key,
                leases: r.attempts,
            },
        );
        self.stats.restored_dead += 1;
        self.stats.dead += 1;
        self.next_id = r.id.0 + 1;
        Ok(())
    }

    /// Makes the next push get an id of at least `next` (ids below it were used by a
    /// previous run of the queue: a durable store keeps its high-water mark, so ids are
    /// never reused across restarts). Never lowers it.
    pub fn reserve_ids_below(&mut self, next: MessageId) {
        self.next_id = self.next_id.max(next.0);
    }

    fn check_restore(
        &self,
        id: MessageId,
        level: u8,
        key: Option<&UniqueKey>,
        live: bool,
    ) -> Result<Option<(UniqueKey, u64)>, RestoreError> {
        if id.0 < self.next_id || id.0 == u64::MAX {
            return Err(RestoreError::IdOutOfOrder(id));
        }
        if level > MAX_PRIORITY {
            return Err(RestoreError::PriorityOutOfRange { id, level });
        }
        let key = key.map(|k| (*k, k.hash64()));
        if let Some((k, hash)) = &key {
            if let Some(holder) = self.keys.find(k, *hash) {
                let holder = MessageId(self.slots[holder as usize].id);
                return Err(RestoreError::KeyTaken { id, holder });
            }
        }
        if live && self.no_room() {
            return Err(RestoreError::Full(id));
        }
        Ok(key)
    }
}

#[cfg(test)]
mod tests {
    use core::time::Duration;

    use super::*;
    use crate::config::Config;

    #[test]
    fn restored_items_keep_attempts_schedule_and_dead_letters() {
        let config = Config::new(Duration::from_secs(1)).with_max_attempts(3);
        let mut q: Queue<&str> = Queue::new(config).unwrap();
        let t = Timestamp::ZERO.saturating_add(Duration::from_secs(10));
        let live = |id, visible_at| Restored {
            id: MessageId(id),
            item: "a",
            attempts: 2,
            visible_at,
            expires_at: None,
            priority: 0,
            key: UniqueKey::new("k"),
            last_error: Some("boom".into()),
        };
        q.restore(live(3, t), t).unwrap();
        q.restore_dead_letter(RestoredDeadLetter {
            id: MessageId(5),
            item: "d",
            attempts: 3,
            reason: Reason::Nacked,
            last_error: Some("bad".into()),
            at: t,
            expires_at: None,
            priority: 1,
            key: None,
        })
        .unwrap();
        let later = t.saturating_add(Duration::from_secs(5));
        assert_eq!(
            q.restore(live(4, later), t),
            Err(RestoreError::IdOutOfOrder(MessageId(4)))
        );
        let mut other = live(6, later);
        other.priority = 9;
        assert_eq!(
            q.restore(other, t),
            Err(RestoreError::PriorityOutOfRange {
                id: MessageId(6),
                level: 9
            })
        );
        assert_eq!(
            q.restore(live(6, later), t),
            Err(RestoreError::KeyTaken {
                id: MessageId(6),
                holder: MessageId(3)
            })
        );
        let mut delayed = live(7, later);
        delayed.key = None;
        q.restore(delayed, t).unwrap();
        assert_eq!(q.next_id(), MessageId(8));
        let lease = q.receive(t).unwrap();
        assert_eq!((lease.id, lease.attempt), (MessageId(3), 3));
        assert!(q.receive(t).is_none());
        q.ack(lease.receipt, t).unwrap();
        assert_eq!(q.poll_timeout(), Some(later));
        let lease = q.receive(later).unwrap();
        assert_eq!(lease.id, MessageId(7));
        assert_eq!(q.dead_letters().count(), 1);
        q.redrive(MessageId(5), later).unwrap();
        // Put back, not pushed or dead-lettered by this run: counted apart.
        let s = q.stats();
        assert_eq!((s.pushed, s.restored, s.restored_dead), (0, 2, 1), "{s:?}");
        assert_eq!((s.dead_lettered, s.redriven, s.acked), (0, 1, 1), "{s:?}");
        assert_eq!(q.dead_lettered_by(Reason::Nacked), 0);
        q.check_invariants().unwrap();
    }
}
