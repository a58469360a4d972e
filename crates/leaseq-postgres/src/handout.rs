//! Handing a claim's leases to the receivers waiting on the claim board (`board.rs`): the
//! oldest first, up to what each asked, a heartbeat receiver's leases kept alive; what
//! receivers that went away would have had to the next ones waiting, then the leases
//! claimed ahead (`Options::prefetch`), the rest put back (unclaimed, their attempt not
//! counted). Two claims hand out this way: the claimer's (`claimer.rs`) and the one an ack
//! batch of a limited queue runs in its own transaction (`handover.rs`).

use std::sync::Arc;

use leaseq_async::Taken;

use crate::board::{Board, ClaimSlot};
use crate::db::Db;
use crate::leases::Leases;
use crate::life::Life;
use crate::settles::Settles;
use crate::ticket::PgTicket;

/// The leases of one claim, in claim order, being handed out.
type Claim<T> = std::iter::Peekable<std::vec::IntoIter<Taken<T, PgTicket>>>;

/// What a hand-out touches, borrowed from the claimer's or the settler's parts.
pub(crate) struct HandOut<'a, T: 'static> {
    pub(crate) db: &'a Db<T>,
    pub(crate) life: &'a Life,
    pub(crate) board: &'a Board<T>,
    pub(crate) settles: &'a Settles,
    pub(crate) leases: &'a Leases,
}

impl<T> HandOut<'_, T> {
    /// Hands the leases `got` of a claim made for `slots` out; unfilled receivers wait again
    /// at the front of the board.
    pub(crate) fn give(&self, mut slots: Vec<Arc<ClaimSlot<T>>>, got: Vec<Taken<T, PgTicket>>) {
        if !got.is_empty() {
            // Leases go to the oldest receivers waiting: one put back by another claim
            // that came back short while this one was in flight is served first.
            let newest = slots.iter().map(|s| s.seq).max().unwrap_or(0);
            let before = slots.len();
            self.board.slots.lock().take_older(newest, &mut slots);
            if slots.len() > before {
                slots.sort_by_key(|s| s.seq);
            }
        }
        let mut got = got.into_iter().peekable();
        let mut unfilled = Vec::new();
        for slot in slots {
            if got.peek().is_none() {
                unfilled.push(slot);
                continue;
            }
            self.fill(&slot, &mut got);
        }
        self.requeue(unfilled);
        // Meant for receivers that went away: the next ones waiting, or back to the queue.
        while got.peek().is_some() {
            let next = self.board.slots.lock().take_slots(1).pop();
            match next {
                Some(slot) => self.fill(&slot, &mut got),
                None => break,
            }
        }
        // Claimed ahead: kept for the next receives, up to `prefetch`.
        {
            let mut board = self.board.slots.lock();
            while board.prefetched.len() < self.db.options.prefetch {
                match got.next() {
                    Some(t) => board.prefetched.push_back(t),
                    None => break,
                }
            }
        }
        let leftover: Vec<(i64, i64)> = got.map(|t| (t.ticket.id, t.ticket.lease)).collect();
        self.settles.unclaim(leftover);
    }

    /// Gives `slot` up to its `max` leases (none if it was abandoned) and wakes its
    /// receiver.
    fn fill(&self, slot: &ClaimSlot<T>, got: &mut Claim<T>) {
        let mut st = slot.state.lock();
        if st.abandoned {
            return;
        }
        for mut taken in got.by_ref().take(slot.max) {
            if slot.heartbeat {
                self.leases.keep_alive(&mut taken);
            }
            st.got.push(taken);
        }
        if let Some(w) = st.waker.take() {
            w.wake();
        }
    }

    /// Puts receivers back in line, each at its place; once the queue is
    /// closed, wakes them instead (they were off the board when `close` woke the waiting
    /// ones, and see the queue closed). The flag is read under the board's lock, which
    /// `close` takes after setting it, so no receiver is left waiting.
    pub(crate) fn requeue(&self, slots: Vec<Arc<ClaimSlot<T>>>) {
        let mut board = self.board.slots.lock();
        if self.life.is_closed() {
            drop(board);
            for slot in slots {
                if let Some(w) = slot.state.lock().waker.take() {
                    w.wake();
                }
            }
            return;
        }
        board.put_back(slots);
    }
}
