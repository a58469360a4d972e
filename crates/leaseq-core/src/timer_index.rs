//! The index of future moments: lease deadlines, end of delays, item expiries.
//!
//! Every entry names a slot and the slot's epoch at the time the entry was made; an entry
//! whose slot has moved on since is stale and is skipped when it surfaces. Stale entries are
//! what acks and extends leave behind, so the index also knows how to compact itself: the
//! queue calls [`TimerIndex::needs_compaction`] after inserting, which keeps the index within
//! `2 × live + SLACK` entries at an amortized O(1) cost per operation.
//!
//! The index is a FIFO with a heap beside it. Most timers arrive in order (one visibility for
//! every lease gives deadlines in the order leases were taken or last extended; one fixed
//! delay gives visibilities in the order items failed), and those go to the FIFO in O(1).
//! A timer earlier than the FIFO's last one (a custom visibility, a capped extension,
//! exponential backoff) goes to the heap in O(log n). The earliest timer is the earlier of the
//! two fronts.

use alloc::collections::{BinaryHeap, VecDeque};
use core::cmp::Reverse;

use crate::time::Timestamp;

/// Entries tolerated beyond twice the live ones before a compaction.
const SLACK: usize = 64;

/// One scheduled moment. Ordered by time, then message id (push order), so that items due at
/// the same instant are handled in push order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Timer {
    pub(crate) at: Timestamp,
    pub(crate) id: u64,
    pub(crate) slot: u32,
    pub(crate) epoch: u32,
}

#[derive(Debug, Default)]
pub(crate) struct TimerIndex {
    fifo: VecDeque<Timer>,
    heap: BinaryHeap<Reverse<Timer>>,
}

impl TimerIndex {
    pub(crate) fn len(&self) -> usize {
        self.fifo.len() + self.heap.len()
    }

    #[inline]
    pub(crate) fn insert(&mut self, t: Timer) {
        match self.fifo.back() {
            Some(back) if *back > t => self.heap.push(Reverse(t)),
            _ => self.fifo.push_back(t),
        }
    }

    /// The earliest timer, stale or not.
    #[inline]
    pub(crate) fn peek(&self) -> Option<&Timer> {
        match (self.fifo.front(), self.heap.peek()) {
            (Some(a), Some(Reverse(b))) => Some(if a <= b { a } else { b }),
            (Some(a), None) => Some(a),
            (None, Some(Reverse(b))) => Some(b),
            (None, None) => None,
        }
    }

    /// Removes the earliest timer.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Timer> {
        let from_fifo = match (self.fifo.front(), self.heap.peek()) {
            (Some(a), Some(Reverse(b))) => a <= b,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if from_fifo {
            self.fifo.pop_front()
        } else {
            self.heap.pop().map(|Reverse(t)| t)
        }
    }

    /// Drops stale timers from the front, so that `peek` names a live one.
    pub(crate) fn clean_front(&mut self, mut is_live: impl FnMut(&Timer) -> bool) {
        while let Some(t) = self.peek() {
            if is_live(t) {
                break;
            }
            self.pop();
        }
    }

    #[inline]
    pub(crate) fn needs_compaction(&self, live: u64) -> bool {
        self.len() as u64 > 2 * live + SLACK as u64
    }

    /// Keeps only live timers. O(len); the queue calls it only when
    /// [`needs_compaction`](Self::needs_compaction) says so, which makes it amortized O(1).
    pub(crate) fn compact(&mut self, mut is_live: impl FnMut(&Timer) -> bool) {
        self.fifo.retain(|t| is_live(t));
        self.heap.retain(|Reverse(t)| is_live(t));
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Timer> {
        self.fifo.iter().chain(self.heap.iter().map(|Reverse(t)| t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(at: u64, id: u64) -> Timer {
        Timer {
            at: Timestamp::from_nanos(at),
            id,
            slot: id as u32,
            epoch: 0,
        }
    }

    #[test]
    fn pops_in_time_then_id_order_across_fifo_and_heap() {
        let mut ix = TimerIndex::default();
        for (at, id) in [(10, 1), (20, 2), (15, 3), (20, 0), (30, 4), (5, 9)] {
            ix.insert(t(at, id));
        }
        let order: alloc::vec::Vec<_> = core::iter::from_fn(|| ix.pop().map(|t| t.id)).collect();
        assert_eq!(order, [9, 1, 3, 0, 2, 4]);
    }

    #[test]
    fn compaction_keeps_live_timers_only() {
        let mut ix = TimerIndex::default();
        for i in 0..200 {
            ix.insert(t(i, i));
        }
        assert!(ix.needs_compaction(10));
        ix.compact(|t| t.id % 20 == 0);
        assert_eq!(ix.len(), 10);
        assert!(!ix.needs_compaction(10));
        assert_eq!(ix.pop().map(|t| t.id), Some(0));
    }
}
