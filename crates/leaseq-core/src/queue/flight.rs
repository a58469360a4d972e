//! The in-flight list: the leases whose deadlines arrive in the order they were taken.
//!
//! With one visibility for every lease and no extension, deadlines come in lease order, so
//! the lease index needs no ordering work at all: each new lease whose `(deadline, id)` is
//! not before the last one listed is appended to a doubly linked list threaded through the
//! slots (`Slot::prev`, `Slot::next`), and taken off it in O(1) by whatever ends it (ack,
//! nack, release, expiry, dead letter, cancel, an extension). A listed lease's deadline is
//! exact and the list is in `(deadline, id)` order, so its head is its earliest timer.
//! Leases that would break the order (a deadline cut by the max lease or the item's
//! expiry, an extension to before the last listed deadline) go to the timer index
//! (`Queue::leases`) as before, counted in `Queue::indexed`; the earliest lease deadline
//! is the earlier of the list's head and the index's front.

use super::{List, Queue, Slot, State, LISTED, NIL};
use crate::time::Timestamp;
use crate::timer_index::Timer;

/// Appends the lease in `slot` (its `last_deadline` set) to the in-flight list `flight`
/// and marks it `LISTED` if its `(deadline, id)` is after the tail's; returns whether it
/// did. On the slots alone, so that a caller holding them borrowed can use it.
#[inline(always)]
pub(super) fn list_in_order<T>(flight: &mut List, slots: &mut [Slot<T>], slot: usize) -> bool {
    let tail = flight.tail;
    let s = &slots[slot];
    let (deadline, id) = (s.last_deadline, s.id);
    let in_order = tail == NIL || {
        let t = &slots[tail as usize];
        (t.last_deadline, t.id) < (deadline, id)
    };
    if in_order {
        slots[slot].meta |= LISTED;
        flight.push_back(slots, slot as u32);
    }
    in_order
}

impl<T> Queue<T> {
    /// Schedules the deadline of the lease just taken in `slot` (its `last_deadline`, at its
    /// current epoch): appended to the in-flight list when it keeps the list's order, into
    /// the timer index otherwise.
    #[inline(always)]
    pub(super) fn schedule_lease(&mut self, slot: usize, deadline: Timestamp) {
        if !list_in_order(&mut self.flight, &mut self.slots, slot) {
            self.index_lease(slot, deadline);
        }
    }

    /// Puts the lease in `slot` into the timer index at `deadline` (and its epoch).
    #[inline(never)]
    pub(super) fn index_lease(&mut self, slot: usize, deadline: Timestamp) {
        let timer = self.slots[slot].timer(slot, deadline);
        self.leases.insert(timer);
        self.indexed += 1;
        if self.leases.needs_compaction(self.indexed) {
            self.compact_leases();
        }
    }

    /// Takes the lease in `slot` off the in-flight list if it is on it; returns whether it
    /// was.
    #[inline(always)]
    pub(super) fn unlist(&mut self, slot: usize) -> bool {
        let s = &mut self.slots[slot];
        if s.meta & LISTED == 0 {
            return false;
        }
        s.meta &= !LISTED;
        self.flight.unlink(&mut self.slots, slot as u32);
        true
    }

    /// An item leaves flight: the in-flight gauge and the list (a lease in the timer index
    /// leaves a stale entry there, as before, and its live count).
    #[inline(always)]
    pub(super) fn leave_flight(&mut self, slot: usize) {
        self.stats.in_flight -= 1;
        self.uncount(slot);
        if !self.unlist(slot) {
            self.indexed -= 1;
        }
    }

    /// The lease deadline the list's head stands for, as a timer.
    #[inline]
    pub(super) fn flight_front(&self) -> Option<Timer> {
        let head = self.flight.head;
        if head == NIL {
            return None;
        }
        let s = &self.slots[head as usize];
        Some(s.timer(head as usize, s.last_deadline))
    }

    /// The earliest lease timer, stale or not, and whether it is the list's head.
    #[inline]
    pub(super) fn lease_front(&self) -> Option<(Timer, bool)> {
        match (self.flight_front(), self.leases.peek()) {
            (Some(a), Some(b)) => Some(if a <= *b { (a, true) } else { (*b, false) }),
            (Some(a), None) => Some((a, true)),
            (None, Some(b)) => Some((*b, false)),
            (None, None) => None,
        }
    }

    /// Moves a running lease whose deadline an extension changed to its new place:
    /// the list's tail if it keeps the order there, the timer index otherwise. The slot's
    /// `last_deadline` is already the new deadline.
    pub(super) fn reschedule_listed(&mut self, slot: usize) {
        self.unlist(slot);
        let deadline = self.slots[slot].last_deadline;
        self.schedule_lease(slot, deadline);
    }

    /// Whether the in-flight list is well formed: linked both ways, every listed slot in
    /// flight and marked, in `(deadline, id)` order, and no marked slot off the list.
    /// Returns its length.
    pub(super) fn flight_list_check(&self) -> Option<usize> {
        let n = self.flight.check(&self.slots)?;
        let mut last: Option<(Timestamp, u64)> = None;
        for slot in self.flight.iter(&self.slots) {
            let s = &self.slots[slot];
            let key = (s.last_deadline, s.id);
            if s.state != State::InFlight || s.meta & LISTED == 0 || last.is_some_and(|l| l >= key)
            {
                return None;
            }
            last = Some(key);
        }
        let marked = self.slots.iter().filter(|s| s.meta & LISTED != 0).count();
        (marked == n).then_some(n)
    }
}
