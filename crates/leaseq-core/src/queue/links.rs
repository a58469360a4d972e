//! Doubly linked lists threaded through the slots (`Slot::prev`, `Slot::next`).
//!
//! A slot is on at most one list at a time: its level's ready list while it is ready, the
//! in-flight list while its lease is listed there (see `flight`). Appending, taking the
//! front and taking a slot out of the middle are O(1) and leave nothing stale behind.

use super::{Slot, NIL};

/// The two ends of a list (`NIL` when it is empty).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct List {
    pub(super) head: u32,
    pub(super) tail: u32,
}

impl List {
    pub(super) const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };

    /// Appends `slot` (on no list).
    #[inline(always)]
    pub(super) fn push_back<T>(&mut self, slots: &mut [Slot<T>], slot: u32) {
        let tail = self.tail;
        let s = &mut slots[slot as usize];
        s.prev = tail;
        s.next = NIL;
        if tail == NIL {
            self.head = slot;
        } else {
            slots[tail as usize].next = slot;
        }
        self.tail = slot;
    }

    /// Takes the first slot off, if any.
    #[inline(always)]
    pub(super) fn pop_front<T>(&mut self, slots: &mut [Slot<T>]) -> Option<u32> {
        let head = self.head;
        if head == NIL {
            return None;
        }
        let next = slots[head as usize].next;
        self.head = next;
        if next == NIL {
            self.tail = NIL;
        } else {
            slots[next as usize].prev = NIL;
        }
        Some(head)
    }

    /// Takes `slot`, which is on this list, off it.
    #[inline(always)]
    pub(super) fn unlink<T>(&mut self, slots: &mut [Slot<T>], slot: u32) {
        let s = &slots[slot as usize];
        let (prev, next) = (s.prev, s.next);
        if prev == NIL {
            self.head = next;
        } else {
            slots[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            slots[next as usize].prev = prev;
        }
    }

    /// The slots from head to tail; stops after `slots.len()` of them, so that a broken
    /// list (a cycle) cannot loop forever in a check.
    pub(super) fn iter<T>(self, slots: &[Slot<T>]) -> impl Iterator<Item = usize> + '_ {
        let mut at = self.head;
        core::iter::from_fn(move || {
            if at == NIL {
                return None;
            }
            let slot = at as usize;
            at = slots.get(slot).map_or(NIL, |s| s.next);
            Some(slot)
        })
        .take(slots.len() + 1)
    }

    /// Whether the list is well formed: each slot's `prev` names the one before it, the
    /// tail is the last one, and it has no cycle. Returns its length.
    pub(super) fn check<T>(self, slots: &[Slot<T>]) -> Option<usize> {
        let mut prev = NIL;
        let mut n = 0;
        for slot in self.iter(slots) {
            n += 1;
            if n > slots.len() || slots[slot].prev != prev {
                return None;
            }
            prev = slot as u32;
        }
        (prev == self.tail).then_some(n)
    }
}
