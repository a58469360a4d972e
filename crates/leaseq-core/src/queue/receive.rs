//! Receive: the next visible item leased for one visibility timeout.

use alloc::vec::Vec;

use super::flight::list_in_order;
use super::receive_run::Unshaped;
use super::slot::{lease_times, start_lease};
use super::{Queue, Slot, LEVEL_BITS, SLOW};
use crate::event::{Event, EventMask};
use crate::id::{MessageId, Receipt};
use crate::lease::Lease;
use crate::time::Timestamp;

impl<T> Queue<T> {
    /// Leases the next visible item for one visibility timeout, or `None` if nothing is
    /// visible. Visible items are served in the order they became visible (see the crate
    /// docs for ties).
    #[inline]
    pub fn receive(&mut self, now: Timestamp) -> Option<Lease<T>>
    where
        T: Clone,
    {
        let now = self.advance(now);
        let slot = self.lease_next(now)?;
        Some(self.lease_of(slot))
    }

    /// Leases up to `max` visible items into `out`; returns how many. One time step and one
    /// due-timer check for the whole batch.
    pub fn receive_many(&mut self, now: Timestamp, max: usize, out: &mut Vec<Lease<T>>) -> usize
    where
        T: Clone,
    {
        self.receive_many_as(now, max, out, |lease| lease)
    }

    /// [`receive_many`](Self::receive_many) with each lease turned into a `D` by `shape` as
    /// it is made (the same leases, in the same order), written straight into `out`: for a
    /// caller that reshapes them, without a vector of leases in between.
    #[inline]
    pub fn receive_many_as<D>(
        &mut self,
        now: Timestamp,
        max: usize,
        out: &mut Vec<D>,
        mut shape: impl FnMut(Lease<T>) -> D,
    ) -> usize
    where
        T: Clone,
    {
        let now = self.advance(now);
        // Every ready item can be leased now, so the batch is exactly this long: `out` is
        // extended by counted ranges, which make room once and write each value in place
        // (a push per item checks for room first and keeps the value aside meanwhile).
        let n = max.min(usize::try_from(self.stats.ready).unwrap_or(usize::MAX));
        let mut done = 0;
        if self.ready_mask & SLOW != 0 {
            if self.is_paused() {
                // Nothing is leased while paused (checked off the run's path: a queue that
                // is never paused takes the run without it).
                return 0;
            }
            // Limits may hold some ready items back: as many as may be leased.
            while let Some(slot) = (done < n).then(|| self.lease_next_inlined(now)).flatten() {
                out.push(shape(self.lease_of(slot)));
                done += 1;
            }
            return done;
        }
        if n > 1 && self.ready_mask == 0 {
            // The run at the ready list's front leased whole (see `receive_run`), then
            // shaped: its leases follow each other on the in-flight list.
            let (run, at) = self.lease_run(now, n);
            let mut unshaped = Unshaped {
                queue: self,
                at,
                left: run,
                now,
            };
            out.extend((0..run).map(|_| {
                // (One borrow of the slot for its lease and the next one's number.)
                let q = &*unshaped.queue;
                let slot = unshaped.at as usize;
                let s = &q.slots[slot];
                let next = s.next;
                let lease = lease_in(s, slot, q.tag);
                (unshaped.at, unshaped.left) = (next, unshaped.left - 1);
                shape(lease)
            }));
            drop(unshaped);
            done = run;
        }
        out.extend((done..n).map(|_| {
            let slot = self
                .lease_next_inlined(now)
                .expect("the ready count counts the ready lists' items");
            shape(self.lease_of(slot))
        }));
        n
    }

    /// Every state change of a receive: leases the next visible item and returns its slot,
    /// which [`lease_of`](Self::lease_of) turns into the `Lease`. Split so that the `Lease`
    /// is built in the caller from fields just stored, rather than returned through memory
    /// written piecewise and read back whole (a store-forwarding stall in the caller).
    #[inline(never)]
    fn lease_next(&mut self, now: Timestamp) -> Option<usize> {
        self.lease_next_inlined(now)
    }

    /// `lease_next`'s body, inlined into `receive_many`'s loop: one call per batch rather
    /// than one per item.
    #[inline(always)]
    fn lease_next_inlined(&mut self, now: Timestamp) -> Option<usize> {
        let mask = self.ready_mask;
        // One borrow of the slots for the whole receive, so that the compiler checks the
        // slot's bounds once.
        let (slots, slot) = if mask == 0 {
            // No level above 0 has a ready item: level 0, with the very steps and counters
            // of a queue without levels.
            let slots = &mut self.slots[..];
            let slot = self.ready[0].pop_front(slots)?;
            self.stats.ready -= 1;
            (slots, slot as usize)
        } else if mask & SLOW == 0 {
            let slot = self.take_highest(mask);
            (&mut self.slots[..], slot)
        } else {
            return self.lease_limited(now);
        };
        let visibility_ns = self.visibility_ns;
        let max_lease_ns = self.max_lease_ns;
        let s = &mut slots[slot];
        let (cap, deadline) = lease_times(s, now, visibility_ns, max_lease_ns);
        start_lease(s, cap, deadline);
        let id = MessageId(s.id);
        let attempt = s.attempts;
        if !list_in_order(&mut self.flight, slots, slot) {
            self.index_lease(slot, deadline);
        }
        self.due = self.due.min(deadline);
        self.stats.in_flight += 1;
        self.stats.delivered += 1;
        if attempt > 1 {
            self.stats.redelivered += 1;
            self.record(Event::Redelivered { id, attempt });
        } else if self.config.events.contains(EventMask::DELIVERED) {
            // Tested here, where it inlines: the event is made only if it is kept (out of
            // line, `record` costs every receive a call).
            self.record(Event::Delivered { id });
        }
        Some(slot)
    }

    /// `lease_next` off its fast paths (the mask's bit 0, `SLOW`): nothing while paused
    /// (`pause`); else, with flow control (`limits`), the first ready item no limit holds
    /// back (`take_allowed`), leased with `lease_next`'s steps.
    #[inline(never)]
    fn lease_limited(&mut self, now: Timestamp) -> Option<usize> {
        if self.is_paused() {
            return None;
        }
        let slot = self.take_allowed()?;
        let s = &mut self.slots[slot];
        let (cap, deadline) = lease_times(s, now, self.visibility_ns, self.max_lease_ns);
        start_lease(s, cap, deadline);
        let (id, attempt) = (MessageId(s.id), s.attempts);
        self.schedule_lease(slot, deadline);
        self.due = self.due.min(deadline);
        self.stats.in_flight += 1;
        self.stats.delivered += 1;
        if attempt > 1 {
            self.stats.redelivered += 1;
            self.record(Event::Redelivered { id, attempt });
        } else if self.config.events.contains(EventMask::DELIVERED) {
            self.record(Event::Delivered { id });
        }
        Some(slot)
    }

    /// Takes the oldest live entry off the ready list of the highest level set in `mask`
    /// (not 0) and returns its slot, still `Ready` (`mask`'s bit 0, `SLOW`, is clear).
    #[inline(never)]
    fn take_highest(&mut self, mask: u8) -> usize {
        let level = (7 - mask.leading_zeros()) as usize & LEVEL_BITS as usize;
        // `ready_count[level] > 0`: the list holds an item.
        let slot = self.ready[level]
            .pop_front(&mut self.slots)
            .expect("a level's bit is set: it has items");
        self.stats.ready -= 1;
        let count = &mut self.ready_count[level];
        *count -= 1;
        if *count == 0 {
            self.ready_mask = mask & !(1 << level);
        }
        slot as usize
    }

    /// The `Lease` for the slot `lease_next` just leased.
    #[inline]
    fn lease_of(&self, slot: usize) -> Lease<T>
    where
        T: Clone,
    {
        lease_in(&self.slots[slot], slot, self.tag)
    }
}

/// The `Lease` of the item leased in `s` (slot number `slot`) of the queue tagged `tag`.
#[inline(always)]
fn lease_in<T: Clone>(s: &Slot<T>, slot: usize, tag: core::num::NonZeroU32) -> Lease<T> {
    let id = MessageId(s.id);
    Lease {
        item: s.item.clone().expect("leased slot holds an item"),
        id,
        receipt: Receipt {
            id,
            slot: slot as u32,
            lease: s.leases,
            queue: tag,
        },
        attempt: s.attempts,
        deadline: s.last_deadline,
        expires_at: (s.expires_at != Timestamp::MAX).then_some(s.expires_at),
    }
}
