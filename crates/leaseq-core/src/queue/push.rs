//! Push: a new item into a slot, ready at once or delayed, with its expiry scheduled.

use core::time::Duration;

use super::{expiry_live, timer_live, LeaseEnd, Queue, Slot, State};
use crate::error::PushError;
use crate::id::MessageId;
use crate::outcome::PushOptions;
use crate::time::Timestamp;

impl<T> Queue<T> {
    /// Adds an item, visible at once. Returns its id, or hands the item back when the
    /// queue is at capacity.
    #[inline]
    pub fn push(&mut self, item: T, now: Timestamp) -> Result<MessageId, PushError<T>> {
        let now = self.advance(now);
        self.push_at(item, now, now, Timestamp::MAX)
    }

    /// Adds an item that becomes visible after `delay`.
    pub fn push_delayed(
        &mut self,
        item: T,
        now: Timestamp,
        delay: Duration,
    ) -> Result<MessageId, PushError<T>> {
        self.push_with(item, now, PushOptions::new().delay(delay))
    }

    /// Adds an item with a delay and/or an expiry (see [`PushOptions`]).
    ///
    /// An item whose expiry is not after `now` is handed back with
    /// [`PushError::AlreadyExpired`].
    pub fn push_with(
        &mut self,
        item: T,
        now: Timestamp,
        options: PushOptions,
    ) -> Result<MessageId, PushError<T>> {
        let now = self.advance(now);
        let expires_at = options.expires_at.unwrap_or(Timestamp::MAX);
        // `Timestamp::MAX` is "never", even when the driver's clock has reached it.
        if expires_at != Timestamp::MAX && expires_at <= now {
            self.stats.rejected += 1;
            return Err(PushError::AlreadyExpired(item));
        }
        self.push_at(item, now, now.saturating_add(options.delay), expires_at)
    }

    /// [`push_with`](Self::push_with) under an id the caller chose: for a driver that hands
    /// out ids before the item reaches the queue (an inbox that producers fill without the
    /// queue's lock). Ids must increase: an `id` below [`next_id`](Self::next_id) is handed
    /// back with [`PushError::IdOutOfOrder`]; ids skipped are never used.
    pub fn push_with_id(
        &mut self,
        id: MessageId,
        item: T,
        now: Timestamp,
        options: PushOptions,
    ) -> Result<MessageId, PushError<T>> {
        if id.0 < self.next_id {
            self.stats.rejected += 1;
            return Err(PushError::IdOutOfOrder(item));
        }
        let next = self.next_id;
        self.next_id = id.0;
        let pushed = self.push_with(item, now, options);
        if pushed.is_err() {
            self.next_id = next;
        }
        pushed
    }

    /// The id the next push will get.
    pub fn next_id(&self) -> MessageId {
        MessageId(self.next_id)
    }

    /// Push after the time step and the expiry check: visible at `visible_at`.
    #[inline]
    fn push_at(
        &mut self,
        item: T,
        now: Timestamp,
        visible_at: Timestamp,
        expires_at: Timestamp,
    ) -> Result<MessageId, PushError<T>> {
        let at_capacity = self
            .config
            .capacity
            .is_some_and(|c| self.stats.live() >= c as u64);
        if at_capacity || (self.free.is_empty() && self.slots.len() >= u32::MAX as usize) {
            self.stats.rejected += 1;
            return Err(PushError::Full(item));
        }
        let id = self.next_id;
        self.next_id += 1;
        let slot = self.occupy(item, id, expires_at, 0, 0);
        self.stats.pushed += 1;
        self.make_visible(slot, visible_at, now);
        Ok(MessageId(id))
    }

    /// Puts an item into a free slot (state Free; the caller makes it ready or delayed).
    #[inline]
    pub(super) fn occupy(
        &mut self,
        item: T,
        id: u64,
        expires_at: Timestamp,
        leases: u32,
        attempts: u32,
    ) -> usize {
        let slot = match self.free.pop() {
            Some(i) => {
                let s = &mut self.slots[i as usize];
                s.item = Some(item);
                s.id = id;
                s.leases = leases;
                s.attempts = attempts;
                s.ended = LeaseEnd::None;
                s.expires_at = expires_at;
                i as usize
            }
            None => {
                self.slots.push(Slot {
                    item: Some(item),
                    id,
                    epoch: 0,
                    leases,
                    attempts,
                    state: State::Free,
                    ended: LeaseEnd::None,
                    lease_cap: Timestamp::ZERO,
                    last_deadline: Timestamp::ZERO,
                    expires_at,
                    prev_id: 0,
                    prev_fate: None,
                });
                self.slots.len() - 1
            }
        };
        if expires_at != Timestamp::MAX {
            self.schedule_expiry(slot, expires_at);
        }
        slot
    }

    /// Enters the expiry of the item just put into `slot`.
    #[inline(never)]
    fn schedule_expiry(&mut self, slot: usize, expires_at: Timestamp) {
        self.expiring += 1;
        self.due = self.due.min(expires_at);
        // Compact before inserting: the slot is still `Free` here, so `expiry_live` would
        // take the new item's own timer for a stale one and drop it (the item would then
        // never expire).
        if self.expiries.needs_compaction(self.expiring) {
            let slots = &self.slots;
            self.expiries.compact(|t| expiry_live(slots, t));
        }
        let timer = self.slots[slot].timer(slot, expires_at);
        self.expiries.insert(timer);
    }

    /// Makes a free or in-flight slot ready, if `at` is not after `instant` (the moment being
    /// applied), or delayed until `at`. A delay that ends before `self.now` still goes through
    /// the delay index, so that `run_due` places it in time order among the other timers.
    #[inline]
    pub(super) fn make_visible(&mut self, slot: usize, at: Timestamp, instant: Timestamp) {
        let s = &mut self.slots[slot];
        s.epoch = s.epoch.wrapping_add(1);
        if at <= instant {
            s.state = State::Ready;
            self.ready.push_back((slot as u32, s.epoch));
            self.stats.ready += 1;
        } else {
            self.make_delayed(slot, at);
        }
    }

    /// The delayed half of `make_visible` (epoch already bumped).
    #[inline(never)]
    fn make_delayed(&mut self, slot: usize, at: Timestamp) {
        let s = &mut self.slots[slot];
        s.state = State::Delayed;
        self.due = self.due.min(at);
        self.delays.insert(s.timer(slot, at));
        self.stats.delayed += 1;
        if self.delays.needs_compaction(self.stats.delayed) {
            let slots = &self.slots;
            self.delays
                .compact(|t| timer_live(slots, t, State::Delayed));
        }
    }
}
