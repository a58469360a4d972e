//! Leasing a run of ready items at once: the front of level 0's ready list moved onto the
//! in-flight list whole.
//!
//! A batch receive leases the first items of the ready list with one time. When their
//! leases keep the in-flight list's order (the usual case: one deadline, ids rising), the
//! run is already linked in that order on the ready list, so it moves across by its two
//! ends, instead of each item being taken off one list and appended to the other.

use super::slot::{lease_times, start_lease};
use super::{Queue, LISTED, NIL};
use crate::event::{Event, EventMask};
use crate::id::{MessageId, Receipt};
use crate::time::Timestamp;

impl<T> Queue<T> {
    /// Leases up to `max` items from the front of level 0's ready list (no item above
    /// level 0 is ready), as many in a row as keep the in-flight list's order, and lists
    /// them; returns how many and the first one's slot (the others follow it on the
    /// in-flight list). For each, the same changes, counts and event, in the same order, as
    /// `lease_next`. Stops before a lease that would go to the timer index (`lease_next`
    /// takes that one).
    #[inline(never)]
    pub(super) fn lease_run(&mut self, now: Timestamp, max: usize) -> (usize, u32) {
        debug_assert_eq!(self.ready_mask, 0, "a run is taken from level 0 alone");
        let visibility_ns = self.visibility_ns;
        let max_lease_ns = self.max_lease_ns;
        let first = self.ready[0].head;
        // What each lease must come after: the in-flight list's tail, then the run's last.
        let (mut listed, (mut after_deadline, mut after_id)) = match self.flight.tail {
            NIL => (false, (Timestamp::ZERO, 0)),
            tail => {
                let t = &self.slots[tail as usize];
                (true, (t.last_deadline, t.id))
            }
        };
        // The counters kept here and stored once, the events recorded after the walk: the
        // loop calls nothing, so the slots stay borrowed across it.
        let (mut at, mut last, mut n) = (first, NIL, 0);
        let (mut due, mut redelivered) = (self.due, 0);
        let slots = &mut self.slots[..];
        while n < max && at != NIL {
            let s = &mut slots[at as usize];
            let (cap, deadline) = lease_times(s, now, visibility_ns, max_lease_ns);
            // `(after_deadline, after_id) >= (deadline, s.id)`, the deadlines (mostly equal)
            // compared first.
            if listed
                && (deadline < after_deadline || (deadline == after_deadline && s.id <= after_id))
            {
                break;
            }
            (listed, after_deadline, after_id) = (true, deadline, s.id);
            start_lease(s, cap, deadline);
            s.meta |= LISTED;
            redelivered += u64::from(s.attempts > 1);
            due = due.min(deadline);
            (last, at, n) = (at, s.next, n + 1);
        }
        self.due = due;
        self.stats.in_flight += n as u64;
        self.stats.delivered += n as u64;
        self.stats.redelivered += redelivered;
        if redelivered > 0 || self.config.events.contains(EventMask::DELIVERED) {
            self.record_run(first, n);
        }
        if n > 0 {
            // The run `first..=last`, linked in order already, from the ready list's front
            // to the in-flight list's back.
            let slots = &mut self.slots[..];
            self.ready[0].head = at;
            if at == NIL {
                self.ready[0].tail = NIL;
            } else {
                slots[at as usize].prev = NIL;
            }
            let tail = self.flight.tail;
            slots[first as usize].prev = tail;
            if tail == NIL {
                self.flight.head = first;
            } else {
                slots[tail as usize].next = first;
            }
            slots[last as usize].next = NIL;
            self.flight.tail = last;
            self.stats.ready -= n as u64;
        }
        (n, first)
    }

    /// The events of the `n` leases of a run from `first` (linked by `Slot::next`), in
    /// order, as `lease_next` records each.
    #[inline(never)]
    fn record_run(&mut self, first: u32, n: usize) {
        let mut at = first;
        for _ in 0..n {
            let s = &self.slots[at as usize];
            let (id, attempt) = (MessageId(s.id), s.attempts);
            at = s.next;
            if attempt > 1 {
                self.record(Event::Redelivered { id, attempt });
            } else if self.config.events.contains(EventMask::DELIVERED) {
                self.record(Event::Delivered { id });
            }
        }
    }
}

/// The leases of a run not handed out yet, from `at` on (following the in-flight list):
/// while a batch shapes them one by one, the item's `Clone` may panic part way. Dropped
/// with some left (only while unwinding), it puts them back, uncounted, so that a panicking
/// clone strands no lease that nobody received (the one whose clone panicked included).
pub(super) struct Unshaped<'q, T> {
    pub(super) queue: &'q mut Queue<T>,
    /// The next lease to hand out.
    pub(super) at: u32,
    /// How many are left, `at` included.
    pub(super) left: usize,
    pub(super) now: Timestamp,
}

impl<T> Drop for Unshaped<'_, T> {
    fn drop(&mut self) {
        let q = &mut *self.queue;
        let mut at = self.at;
        for _ in 0..self.left {
            let s = &q.slots[at as usize];
            let receipt = Receipt {
                id: MessageId(s.id),
                slot: at,
                lease: s.leases,
                queue: q.tag,
            };
            // Read before the put-back moves it onto the ready list.
            at = s.next;
            let put = q.put_back(receipt, self.now);
            debug_assert!(put.is_ok(), "a run's lease is held: {put:?}");
        }
    }
}
