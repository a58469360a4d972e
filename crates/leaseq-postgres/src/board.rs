//! The claim board: the receivers of this process waiting, oldest first, and the leases
//! claimed ahead for the next ones, with the claimer's wake-up. The claimer task
//! (`claimer.rs`) owns it.
//!
//! Who writes: receives post their slots and take leases claimed ahead (`receive.rs`); the
//! claimer takes slots, fills them, puts unfilled ones back in front and keeps leases
//! ahead; `close` (`seam.rs`) wakes and drops the waiting slots, and the store puts the
//! leases ahead back when it closes or stops (`store.rs`). A slot's own state is written by
//! the claimer (what it got) and by its receive (its waker, abandoned).
//!
//! [`Board::wake`] is the claimer's wake-up; anyone who may have made items claimable
//! rings it: the writer after a commit, a keyed push, the rescuer, a nack that retries, an
//! unclaim, a redrive, the listener on a notification, and a receive that posts a slot or
//! takes a lease ahead. A leaf but for the ticket.

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::Waker;

use event_listener::Event;
use leaseq_async::Taken;
use parking_lot::Mutex;

use crate::ticket::PgTicket;

/// One waiting receive: when it came, how many it takes, whether with a heartbeat, and
/// what it got.
pub(crate) struct ClaimSlot<T> {
    /// Its place in line: receives are served in the order they posted their slots.
    pub(crate) seq: u64,
    pub(crate) max: usize,
    pub(crate) heartbeat: bool,
    pub(crate) state: Mutex<SlotState<T>>,
}

pub(crate) struct SlotState<T> {
    pub(crate) got: Vec<Taken<T, PgTicket>>,
    pub(crate) waker: Option<Waker>,
    /// The receive went away: whatever comes is handed back.
    pub(crate) abandoned: bool,
}

/// The receivers waiting, oldest first (by [`ClaimSlot::seq`]).
pub(crate) struct ClaimBoard<T> {
    pub(crate) waiting: VecDeque<Arc<ClaimSlot<T>>>,
    /// The next slot's [`ClaimSlot::seq`].
    pub(crate) next_seq: u64,
    /// Leases claimed ahead (`Options::prefetch`), oldest first, for the next receives.
    pub(crate) prefetched: VecDeque<Taken<T, PgTicket>>,
}

impl<T> Default for ClaimBoard<T> {
    fn default() -> Self {
        ClaimBoard {
            waiting: VecDeque::new(),
            next_seq: 0,
            prefetched: VecDeque::new(),
        }
    }
}

impl<T> ClaimBoard<T> {
    /// Takes up to `max` prefetched leases with at least half their visibility left
    /// (`fresh_until`: the local time before which a lease's deadline is too near); the
    /// stale ones are returned in `stale` to be put back.
    pub(crate) fn take_prefetched(
        &mut self,
        max: usize,
        fresh_until: leaseq_core::Timestamp,
        stale: &mut Vec<(i64, i64)>,
    ) -> Vec<Taken<T, PgTicket>> {
        let mut out = Vec::new();
        while out.len() < max {
            let Some(t) = self.prefetched.pop_front() else {
                break;
            };
            if t.deadline < fresh_until {
                stale.push((t.ticket.id, t.ticket.lease));
            } else {
                out.push(t);
            }
        }
        out
    }

    /// Posts a new receive's slot at the back of the line.
    pub(crate) fn post(
        &mut self,
        max: usize,
        heartbeat: bool,
        waker: Option<Waker>,
    ) -> Arc<ClaimSlot<T>> {
        let slot = Arc::new(ClaimSlot {
            seq: self.next_seq,
            max,
            heartbeat,
            state: Mutex::new(SlotState {
                got: Vec::new(),
                waker,
                abandoned: false,
            }),
        });
        self.next_seq += 1;
        self.waiting.push_back(slot.clone());
        slot
    }

    /// Puts slots taken for a claim back in line, each at its place: two claims in flight
    /// may put theirs back in either order.
    pub(crate) fn put_back(&mut self, slots: Vec<Arc<ClaimSlot<T>>>) {
        for slot in slots {
            let at = self.waiting.partition_point(|s| s.seq < slot.seq);
            self.waiting.insert(at, slot);
        }
    }

    /// Takes the waiting slots older than `seq`: a claim that came back with leases serves
    /// them before its own receivers (put back by another claim that came back short
    /// before this one's leases were committed).
    pub(crate) fn take_older(&mut self, seq: u64, into: &mut Vec<Arc<ClaimSlot<T>>>) {
        while self.waiting.front().is_some_and(|s| s.seq < seq) {
            into.extend(self.waiting.pop_front());
        }
    }

    /// Takes the oldest waiting slots for one claim: as many as fit in `max_claim` items
    /// (at least one slot). Abandoned slots are dropped on the way.
    pub(crate) fn take_slots(&mut self, max_claim: usize) -> Vec<Arc<ClaimSlot<T>>> {
        let mut taken = Vec::new();
        let mut wanted = 0;
        while let Some(slot) = self.waiting.front() {
            if slot.state.lock().abandoned {
                self.waiting.pop_front();
                continue;
            }
            if !taken.is_empty() && wanted + slot.max > max_claim {
                break;
            }
            wanted += slot.max;
            taken.extend(self.waiting.pop_front());
        }
        taken
    }
}

/// The board and the claimer's wake-up (see the file's header).
pub(crate) struct Board<T> {
    pub(crate) slots: Mutex<ClaimBoard<T>>,
    /// Wakes the claimer (a receiver waits, items may have come, or stop).
    pub(crate) wake: Event,
}

impl<T> Default for Board<T> {
    fn default() -> Self {
        Board {
            slots: Mutex::new(ClaimBoard::default()),
            wake: Event::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seqs(board: &ClaimBoard<()>) -> Vec<u64> {
        board.waiting.iter().map(|s| s.seq).collect()
    }

    #[test]
    fn slots_put_back_by_two_claims_keep_their_order() {
        let mut board = ClaimBoard::<()>::default();
        for _ in 0..4 {
            board.post(1, false, None);
        }
        // Two claims in flight: [0, 1] and [2]; the second comes back short first.
        let first = board.take_slots(2);
        let second = board.take_slots(1);
        assert_eq!(seqs(&board), [3]);
        board.put_back(second);
        board.put_back(first);
        assert_eq!(seqs(&board), [0, 1, 2, 3]);
    }

    #[test]
    fn a_claim_with_leases_serves_the_older_receivers_first() {
        let mut board = ClaimBoard::<()>::default();
        for _ in 0..3 {
            board.post(1, false, None);
        }
        let older = board.take_slots(1);
        let mine = board.take_slots(1);
        // The older claim came back short and put its receiver back.
        board.put_back(older);
        let mut slots = mine;
        board.take_older(slots[0].seq, &mut slots);
        slots.sort_by_key(|s| s.seq);
        assert_eq!(slots.iter().map(|s| s.seq).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(seqs(&board), [2], "a younger receiver stays in line");
    }
}
