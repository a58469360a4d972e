//! Cancel: taking a live item out of the queue by id before it is acked; and ending a
//! waiting item by its key as if its time to live ran out (a schedule's tick no longer
//! wanted).

use super::{Fate, Queue, State};
use crate::error::CancelError;
use crate::event::{Event, Reason};
use crate::id::MessageId;
use crate::key::UniqueKey;
use crate::time::Timestamp;

impl<T> Queue<T> {
    /// Removes a ready or delayed item and hands it back. Its unique key is free at once; a
    /// receipt of an earlier lease of it is stale with [`ReceiptError::Cancelled`]. Counted in
    /// [`Stats::cancelled`](crate::Stats::cancelled) and reported as [`Event::Cancelled`].
    ///
    /// Refused with [`CancelError::InFlight`] if the item is leased (see
    /// [`cancel_leased`](Self::cancel_leased)), [`CancelError::DeadLettered`] if it is a dead
    /// letter, [`CancelError::NotFound`] if no live item has this id. Everything due at `now`
    /// is applied first: an item whose lease ran out by `now` is ready again, one whose
    /// expiry passed is a dead letter.
    ///
    /// Finding the item by id costs a pass over the slots (O(items)), kept off the push,
    /// receive and ack paths, which maintain no id index.
    ///
    /// [`ReceiptError::Cancelled`]: crate::ReceiptError::Cancelled
    pub fn cancel(&mut self, id: MessageId, now: Timestamp) -> Result<T, CancelError> {
        self.advance(now);
        self.cancel_slot(id, false)
    }

    /// [`cancel`](Self::cancel) that also cancels an item in flight: the lease ends at once,
    /// and its holder's ack, nack, extend or dead-letter is refused with
    /// [`ReceiptError::Cancelled`](crate::ReceiptError::Cancelled) (a late ack is counted in
    /// [`Stats::late_acks_stale`](crate::Stats::late_acks_stale)). The queue's copy of the
    /// item is handed back; the holder keeps its clone.
    pub fn cancel_leased(&mut self, id: MessageId, now: Timestamp) -> Result<T, CancelError> {
        self.advance(now);
        self.cancel_slot(id, true)
    }

    /// Ends the waiting (ready or delayed) item that holds `key` as if its time to live ran
    /// out at `now`: dead-lettered with [`Reason::Expired`] (counted in
    /// [`Stats::expired`](crate::Stats::expired), reported as [`Event::DeadLettered`]), its
    /// key free. Returns its id; `None` when no waiting item holds the key (none does, or the
    /// holder is in flight: its lease runs on). O(1). Everything due at `now` is applied
    /// first. A scheduler takes back the ticks it pushed ahead that its catch-up policy no
    /// longer runs with it (see [`Schedule::stale`](crate::schedule::Schedule::stale)).
    pub fn expire_key(&mut self, key: &UniqueKey, now: Timestamp) -> Option<MessageId> {
        let now = self.advance(now);
        let slot = self.keys.find(key, key.hash64())? as usize;
        if !matches!(self.slots[slot].state, State::Ready | State::Delayed) {
            return None;
        }
        let id = MessageId(self.slots[slot].id);
        self.leave_waiting(slot);
        self.bury(slot, now, Reason::Expired);
        Some(id)
    }

    /// Deliveries the live item `id` has had (`None`: no live item has that id). A linear
    /// scan, as a cancel's: for a store recording what a cancel finished.
    pub fn attempts_of(&self, id: MessageId) -> Option<u32> {
        self.slots
            .iter()
            .find(|s| s.state != State::Free && s.id == id.0)
            .map(|s| s.attempts)
    }

    fn cancel_slot(&mut self, id: MessageId, leased_too: bool) -> Result<T, CancelError> {
        let found = self
            .slots
            .iter()
            .position(|s| s.state != State::Free && s.id == id.0);
        let Some(slot) = found else {
            return Err(if self.is_dead_letter(id) {
                CancelError::DeadLettered(id)
            } else {
                CancelError::NotFound(id)
            });
        };
        let in_flight = self.slots[slot].state == State::InFlight;
        if in_flight && !leased_too {
            return Err(CancelError::InFlight(id));
        }
        self.leave_waiting(slot);
        let item = self.release_slot(slot, Fate::Cancelled);
        self.stats.cancelled += 1;
        self.record(Event::Cancelled { id, in_flight });
        Ok(item)
    }
}
