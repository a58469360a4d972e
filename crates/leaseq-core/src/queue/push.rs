//! Push: a new item into a slot, ready at once or delayed, with its expiry scheduled.

use core::time::Duration;

use super::push_window::{NoWindow, WindowArg};
use super::{expiry_live, timer_live, Fate, LeaseEnd, Queue, Slot, State, KEYED, LEVEL_BITS, NIL};
use crate::error::PushError;
use crate::event::Event;
use crate::id::MessageId;
use crate::key::UniqueKey;
use crate::outcome::{KeyOption, PushOptions, Pushed, MAX_PRIORITY};
use crate::time::Timestamp;

impl<T> Queue<T> {
    /// Adds an item, visible at once. Returns its id, or hands the item back when the
    /// queue is at capacity.
    #[inline(always)]
    pub fn push(&mut self, item: T, now: Timestamp) -> Result<MessageId, PushError<T>> {
        let now = self.advance(now);
        self.push_at(item, now, now, Timestamp::MAX)
            .map_err(|full| self.refused_full(full, false))
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

    /// Adds an item with a delay, an expiry, a priority level and/or a unique key (see
    /// [`PushOptions`]).
    ///
    /// Refused, with the item handed back, when: the level is above
    /// [`MAX_PRIORITY`](crate::MAX_PRIORITY) ([`PushError::PriorityOutOfRange`]); the key is
    /// longer than [`UniqueKey::MAX_LEN`](crate::UniqueKey::MAX_LEN)
    /// ([`PushError::KeyTooLong`]); the expiry is not after `now`
    /// ([`PushError::AlreadyExpired`]); a live item holds the key and is not replaced
    /// ([`PushError::DuplicateKey`]); the queue is at capacity ([`PushError::Full`]). They
    /// are checked in that order. An item replaced by
    /// [`replace_pending`](PushOptions::replace_pending) is dropped here; see
    /// [`push_take`](Self::push_take) to have it handed out.
    pub fn push_with(
        &mut self,
        item: T,
        now: Timestamp,
        options: PushOptions,
    ) -> Result<MessageId, PushError<T>> {
        // A replaced item is dropped here, once the queue is consistent again.
        self.push_take(item, now, options).map(|p| p.id)
    }

    /// [`push_with`](Self::push_with) that hands out the pending item a
    /// [`replace_pending`](PushOptions::replace_pending) push replaced, rather than dropping
    /// it: for a driver that must not run an item's `Drop` (user code) under its lock.
    pub fn push_take(
        &mut self,
        item: T,
        now: Timestamp,
        options: PushOptions,
    ) -> Result<Pushed<T>, PushError<T>> {
        let now = self.advance(now);
        self.push_options(item, now, &options, NoWindow)
    }

    /// [`push_with`](Self::push_with) under an id the caller chose: for a driver that hands
    /// out ids before the item reaches the queue (an inbox that producers fill without the
    /// queue's lock). Ids must increase: an `id` below [`next_id`](Self::next_id) is handed
    /// back with [`PushError::IdOutOfOrder`]; ids skipped are never used. A refused push
    /// does not use up `id`.
    #[inline(always)]
    pub fn push_with_id(
        &mut self,
        id: MessageId,
        item: T,
        now: Timestamp,
        options: PushOptions,
    ) -> Result<MessageId, PushError<T>> {
        if options.is_plain() {
            return self.push_plain_with_id(id, item, now, options.waits_for_room);
        }
        self.push_with_id_take(id, item, now, options).map(|p| p.id)
    }

    /// [`push_with_id`](Self::push_with_id) that hands out a replaced item, as
    /// [`push_take`](Self::push_take) does.
    pub fn push_with_id_take(
        &mut self,
        id: MessageId,
        item: T,
        now: Timestamp,
        options: PushOptions,
    ) -> Result<Pushed<T>, PushError<T>> {
        self.under_id(id, item, |q, item| q.push_take(item, now, options))
    }

    /// The id the next push will get.
    pub fn next_id(&self) -> MessageId {
        MessageId(self.next_id)
    }

    /// Push with options, after the time step; a key held for `window` (generic, so that
    /// the plain `push_take`'s copy, with `NoWindow`, carries no window at all and stays
    /// inlined into its one caller).
    pub(super) fn push_options<W: WindowArg>(
        &mut self,
        item: T,
        now: Timestamp,
        options: &PushOptions,
        window: W,
    ) -> Result<Pushed<T>, PushError<T>> {
        let level = options.priority;
        if level > MAX_PRIORITY {
            self.stats.rejected += 1;
            return Err(PushError::PriorityOutOfRange { item, level });
        }
        // By reference: the key is copied once, into the key table.
        let key = match options.key_option() {
            KeyOption::None => None,
            KeyOption::Key(k) => Some(k),
            &KeyOption::TooLong(len) => {
                self.stats.rejected += 1;
                return Err(PushError::KeyTooLong { item, len });
            }
        };
        // `Timestamp::MAX` is "never", even when the driver's clock has reached it. (Tested
        // on the `Option` first: a push without an expiry takes one branch here, where
        // testing the unwrapped value made the compiler compare it twice on every push.)
        let expires_at = match options.expires_at {
            None => Timestamp::MAX,
            Some(at) if at != Timestamp::MAX && at <= now => {
                return Err(self.already_expired(item));
            }
            Some(at) => at,
        };
        let visible_at = now.saturating_add(options.delay);
        let Some(key) = key else {
            return match self.push_at_level(item, now, visible_at, expires_at, level) {
                Ok(id) => Ok(Pushed { id, replaced: None }),
                Err(full) => Err(self.refused_full(full, options.waits_for_room)),
            };
        };
        self.push_keyed(
            item, now, visible_at, expires_at, level, key, options, window,
        )
    }

    /// Counts a push refused for an expiry not after its time; hands the refusal back.
    #[cold]
    fn already_expired(&mut self, item: T) -> PushError<T> {
        self.stats.rejected += 1;
        PushError::AlreadyExpired(item)
    }

    /// Counts a push refused as full in `rejected`, unless its caller `waits` for room and
    /// pushes again (a refusal it never returns to anyone); hands the refusal back.
    #[cold]
    pub(super) fn refused_full(&mut self, full: PushError<T>, waits: bool) -> PushError<T> {
        if !waits {
            self.stats.rejected += 1;
        }
        full
    }

    /// The keyed half of `push_options`: the duplicate check, the replacement, the table.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn push_keyed<W: WindowArg>(
        &mut self,
        item: T,
        now: Timestamp,
        visible_at: Timestamp,
        expires_at: Timestamp,
        level: u8,
        key: &UniqueKey,
        options: &PushOptions,
        window: W,
    ) -> Result<Pushed<T>, PushError<T>> {
        let hash = key.hash64();
        let mut replacing = None;
        let mut holder = self.keys.find(key, hash);
        if let Some(lapsed) = holder.filter(|&h| self.key_lapsed(h as usize, now)) {
            // Its window has passed (see `key_windows`): the key goes to this push.
            self.drop_key(lapsed as usize);
            holder = None;
        }
        if holder.is_none() {
            if let Some(existing) = self.gone_holder(key, now) {
                self.stats.rejected += 1;
                self.stats.duplicates += 1;
                return Err(PushError::DuplicateKey { item, existing });
            }
        }
        if let Some(holder) = holder {
            let s = &self.slots[holder as usize];
            if options.replace_pending && s.state != State::InFlight {
                replacing = Some(holder as usize);
            } else {
                self.stats.rejected += 1;
                self.stats.duplicates += 1;
                return Err(PushError::DuplicateKey {
                    item,
                    existing: MessageId(s.id),
                });
            }
        }
        // A replacement frees the slot and the place it takes.
        if replacing.is_none() && self.no_room() {
            return Err(self.refused_full(PushError::Full(item), options.waits_for_room));
        }
        let replaced = replacing.map(|slot| {
            let old = MessageId(self.slots[slot].id);
            self.leave_waiting(slot);
            let item = self.release_slot(slot, Fate::Cancelled);
            self.forget_gone(key);
            self.stats.cancelled += 1;
            self.stats.replaced += 1;
            (old, item)
        });
        let id = self.next_id;
        self.next_id += 1;
        let slot = self.occupy(item, id, expires_at, 0, 0, level | KEYED);
        self.keys.insert(slot as u32, key, hash);
        self.set_window(slot, &window.window(), now);
        self.stats.pushed += 1;
        self.make_visible_at(slot, level as usize, visible_at, now);
        if let Some((old, _)) = &replaced {
            self.record(Event::Replaced {
                id: *old,
                by: MessageId(id),
            });
        }
        Ok(Pushed {
            id: MessageId(id),
            replaced,
        })
    }

    /// Whether a push without a replacement must be refused as full: at the configured
    /// capacity, or out of slot numbers.
    #[inline]
    pub(super) fn no_room(&self) -> bool {
        self.config
            .capacity
            .is_some_and(|c| self.live() >= c as u64)
            || (self.free == NIL && self.slots.len() >= u32::MAX as usize)
    }

    /// Push after the time step and the expiry check: visible at `visible_at`, level 0.
    /// (Always inlined: `push_at_level`'s body, into the plain pushes' loops.)
    #[inline(always)]
    pub(super) fn push_at(
        &mut self,
        item: T,
        now: Timestamp,
        visible_at: Timestamp,
        expires_at: Timestamp,
    ) -> Result<MessageId, PushError<T>> {
        self.push_at_level(item, now, visible_at, expires_at, 0)
    }

    /// Push of an item without a key, after the time step and the checks of its options.
    /// A refusal as full is not counted here: the caller knows whether it counts (see
    /// [`refused_full`](Self::refused_full)).
    #[inline(always)]
    fn push_at_level(
        &mut self,
        item: T,
        now: Timestamp,
        visible_at: Timestamp,
        expires_at: Timestamp,
        level: u8,
    ) -> Result<MessageId, PushError<T>> {
        if self.no_room() {
            return Err(PushError::Full(item));
        }
        let id = self.next_id;
        self.next_id += 1;
        self.stats.pushed += 1;
        let free = self.free;
        if free != NIL && expires_at == Timestamp::MAX && visible_at <= now {
            // The common push (a free slot, no expiry, ready at once): `occupy` and
            // `make_visible_at` on one borrow of the slots, so that the compiler checks the
            // slot's bounds once.
            let slots = &mut self.slots[..];
            let s = &mut slots[free as usize];
            self.free = s.next;
            s.fill(item, id, expires_at, 0, 0, level);
            s.epoch = s.epoch.wrapping_add(1);
            s.state = State::Ready;
            s.note_ready(now);
            let level = level as usize & LEVEL_BITS as usize;
            self.ready[level].push_back(slots, free);
            self.count_ready(level);
        } else {
            let slot = self.occupy(item, id, expires_at, 0, 0, level);
            self.make_visible_at(slot, level as usize, visible_at, now);
        }
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
        meta: u8,
    ) -> usize {
        let slot = match self.free {
            NIL => {
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
                    meta,
                    prev: NIL,
                    next: NIL,
                });
                self.slots.len() - 1
            }
            i => {
                let s = &mut self.slots[i as usize];
                self.free = s.next;
                s.fill(item, id, expires_at, leases, attempts, meta);
                i as usize
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
        let level = self.slots[slot].level();
        self.make_visible_at(slot, level, at, instant);
    }

    /// `make_visible` for an item whose level the caller knows: a push, so that finding the
    /// level's ready list does not wait for the slot's `meta` just written.
    #[inline]
    fn make_visible_at(&mut self, slot: usize, level: usize, at: Timestamp, instant: Timestamp) {
        let s = &mut self.slots[slot];
        s.epoch = s.epoch.wrapping_add(1);
        if at <= instant {
            s.state = State::Ready;
            self.enqueue_ready(slot as u32, level, instant);
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
