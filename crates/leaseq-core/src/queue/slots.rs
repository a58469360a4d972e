//! Slots: taking items out of their gauges, freeing slots, and keeping the indexes
//! within their bound.

use super::{expiry_live, timer_live, Fate, Queue, State, KEYED, LISTED, TAGGED};
use crate::id::Receipt;

impl<T> Queue<T> {
    /// Takes a ready or delayed item out of its gauge (its index entry goes stale).
    pub(super) fn leave_waiting(&mut self, slot: usize) {
        match self.slots[slot].state {
            State::Ready => {
                let level = self.slots[slot].level();
                self.ready[level].unlink(&mut self.slots, slot as u32);
                self.stats.ready -= 1;
                if level != 0 {
                    self.ready_count[level] -= 1;
                    if self.ready_count[level] == 0 {
                        self.ready_mask &= !(1 << level);
                    }
                }
            }
            State::Delayed => self.stats.delayed -= 1,
            State::InFlight => self.leave_flight(slot),
            State::Free => {}
        }
    }

    /// Frees an acked slot, handing its item to the caller (to drop once the queue is
    /// consistent).
    #[inline]
    pub(super) fn release_slot(&mut self, slot: usize, fate: Fate) -> T {
        let item = self.slots[slot].item.take();
        self.free_slot(slot, fate);
        item.expect("a live slot holds its item")
    }

    #[inline]
    pub(super) fn free_slot(&mut self, slot: usize, fate: Fate) {
        self.vacate(slot, fate);
        self.trim_indexes();
    }

    /// `free_slot` without the index trim, for callers that trim what they changed. Frees
    /// the item's unique key, if it holds one.
    #[inline(always)]
    pub(super) fn vacate(&mut self, slot: usize, fate: Fate) {
        let (expiring, keyed) = self.slots[slot].vacate(slot, fate, &mut self.free);
        self.vacated(slot, expiring, keyed);
    }

    /// The rest of `vacate` once the slot itself is free (`Slot::vacate`): the expiry gauge,
    /// the item's error and its key.
    #[inline(always)]
    pub(super) fn vacated(&mut self, slot: usize, expiring: bool, keyed: bool) {
        if expiring {
            self.expiring -= 1;
        }
        if !self.side.is_empty() {
            if keyed {
                // (Before the side record goes: it may hold the key's window.)
                self.keep_window(slot);
            }
            self.side.remove(&(slot as u32));
        }
        if keyed {
            self.unkey(slot);
        }
    }

    /// `running`, taking the item, `leave_flight` and `vacate` of an ack's fast path on one
    /// borrow of the slots, so that the slot's bounds are checked once. `None` unless `r`
    /// is the running lease; else the item, whether it had an expiry and whether its lease
    /// was in the timer index (`indexed` went down).
    #[inline(always)]
    pub(super) fn take_running(&mut self, r: Receipt) -> Option<(Option<T>, bool, bool)> {
        let tag = self.tag;
        let slot = r.slot as usize;
        let slots = &mut self.slots[..];
        let s = slots.get_mut(slot)?;
        if !(r.queue == tag && s.state == State::InFlight && s.id == r.id.0 && s.leases == r.lease)
        {
            return None;
        }
        let item = s.item.take();
        let indexed = s.meta & LISTED == 0;
        if indexed {
            self.indexed -= 1;
        } else {
            s.meta &= !LISTED;
            self.flight.unlink(slots, slot as u32);
        }
        self.stats.in_flight -= 1;
        let (expiring, keyed) = slots[slot].vacate(slot, Fate::Acked, &mut self.free);
        self.vacated(slot, expiring, keyed);
        Some((item, expiring, indexed))
    }

    /// Frees the unique key and the flow keys of the item leaving `slot` (its meta as it
    /// was). Out of line and cold: the ack path of items without them stays as small as it
    /// was; a keyed item without flow keys takes the steps it took before them.
    #[cold]
    #[inline(never)]
    fn unkey(&mut self, slot: usize) {
        let meta = self.slots[slot].meta;
        if meta & TAGGED != 0 {
            return self.unkey_tagged(slot, meta);
        }
        self.slots[slot].meta = meta & !KEYED;
        self.keys.remove(slot as u32);
    }

    /// `unkey` of an item with flow keys (see `limits`), and its unique key if it has one.
    #[cold]
    #[inline(never)]
    fn unkey_tagged(&mut self, slot: usize, meta: u8) {
        let dead = self.slots[slot].prev_fate == Some(Fate::DeadLettered);
        self.untag(slot, dead);
        self.slots[slot].meta &= !(KEYED | TAGGED);
        if meta & KEYED != 0 {
            self.keys.remove(slot as u32);
        }
    }

    pub(super) fn compact_leases(&mut self) {
        let slots = &self.slots;
        self.leases
            .compact(|t| timer_live(slots, t, State::InFlight));
    }

    /// Keeps every index within `2 × live + 64` entries. Inserts check their own index, but
    /// entries also go stale when a live count drops with no insert to follow (ack, nack,
    /// release, dead letter, expiry, receive, end of a delay): without this an index stays
    /// at its peak size, e.g. after a batch of leases is acked out of order. Called wherever
    /// an item leaves a gauge, once its slot is consistent again. The ready lists and the
    /// in-flight list are linked through the slots and never hold a stale entry.
    #[inline]
    pub(super) fn trim_indexes(&mut self) {
        if self.leases.needs_compaction(self.indexed)
            || self.delays.needs_compaction(self.stats.delayed)
            || self.expiries.needs_compaction(self.expiring)
        {
            self.compact_indexes();
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn compact_indexes(&mut self) {
        let slots = &self.slots;
        if self.leases.needs_compaction(self.indexed) {
            self.leases
                .compact(|t| timer_live(slots, t, State::InFlight));
        }
        if self.delays.needs_compaction(self.stats.delayed) {
            self.delays
                .compact(|t| timer_live(slots, t, State::Delayed));
        }
        if self.expiries.needs_compaction(self.expiring) {
            self.expiries.compact(|t| expiry_live(slots, t));
        }
    }
}
