//! Settling a lease: ack, nack, extend, release and dead-letter.

use alloc::string::String;
use core::time::Duration;

use super::receipts::Check;
use super::{Fate, LeaseEnd, Queue, LISTED};
use crate::error::ReceiptError;
use crate::event::{Event, LateAckKind, Reason};
use crate::id::Receipt;
use crate::outcome::{Acked, Extended, Failure, Nacked, Retry};
use crate::time::Timestamp;

impl<T> Queue<T> {
    /// Removes the item for good.
    ///
    /// Accepted while the lease runs, and also after its deadline as long as nobody has
    /// leased the item again ([`Acked::LateUnclaimed`], counted in
    /// [`Stats::late_acks_unclaimed`](crate::Stats::late_acks_unclaimed)). A stale receipt is
    /// refused with the reason, counted in
    /// [`Stats::late_acks_stale`](crate::Stats::late_acks_stale) and reported as
    /// [`Event::LateAck`].
    #[inline]
    pub fn ack(&mut self, receipt: Receipt, now: Timestamp) -> Result<Acked, ReceiptError> {
        // The item is dropped here, once the queue is consistent again: a `Drop` that panics
        // cannot leave it half-changed.
        self.ack_take(receipt, now).map(|(acked, _item)| acked)
    }

    /// [`ack`](Self::ack) that hands the acked item to the caller rather than dropping it:
    /// for a driver that must not run an item's `Drop` (user code) while it holds a lock.
    #[inline(always)]
    pub fn ack_take(
        &mut self,
        receipt: Receipt,
        now: Timestamp,
    ) -> Result<(Acked, T), ReceiptError> {
        let now = self.advance(now);
        // Fast path: the lease is running.
        if let Some((item, expiring, indexed)) = self.take_running(receipt) {
            self.stats.acked += 1;
            // `trim_indexes` narrowed to the gauges an ack lowers (a listed lease leaves
            // nothing behind in the lease index, nor lowers its live count).
            if (indexed && self.leases.needs_compaction(self.indexed))
                || (expiring && self.expiries.needs_compaction(self.expiring))
            {
                self.compact_indexes();
            }
            return Ok((Acked::OnTime, item.expect("a leased slot holds its item")));
        }
        self.ack_checked(receipt, now)
    }

    /// `ack_take` for whatever the fast path does not take.
    #[inline(never)]
    fn ack_checked(
        &mut self,
        receipt: Receipt,
        now: Timestamp,
    ) -> Result<(Acked, T), ReceiptError> {
        match self.check(receipt) {
            Check::Held(slot) => {
                self.leave_flight(slot);
                let item = self.release_slot(slot, Fate::Acked);
                self.stats.acked += 1;
                Ok((Acked::OnTime, item))
            }
            Check::Unclaimed(slot) => {
                let late_by = now.saturating_duration_since(self.slots[slot].last_deadline);
                self.leave_waiting(slot);
                let item = self.release_slot(slot, Fate::Acked);
                self.stats.acked += 1;
                self.stats.late_acks_unclaimed += 1;
                self.record(Event::LateAck {
                    id: receipt.id,
                    kind: LateAckKind::Unclaimed,
                    late_by: Some(late_by),
                });
                Ok((Acked::LateUnclaimed { late_by }, item))
            }
            Check::Stale(err) => {
                let kind = match err {
                    ReceiptError::Redelivered(_) => LateAckKind::Redelivered,
                    ReceiptError::DeadLettered(_) => LateAckKind::DeadLettered,
                    ReceiptError::AlreadyAcked(_) => LateAckKind::AlreadyAcked,
                    ReceiptError::Released(_) => LateAckKind::Released,
                    ReceiptError::Cancelled(_) => LateAckKind::Cancelled,
                    _ => return Err(err),
                };
                self.stats.late_acks_stale += 1;
                self.record(Event::LateAck {
                    id: receipt.id,
                    kind,
                    late_by: None,
                });
                Err(err)
            }
        }
    }

    /// Acks every receipt in `receipts`, in order, with one time step; returns how many were
    /// accepted. Refusals are counted and reported exactly as by [`ack`](Self::ack).
    pub fn ack_many(&mut self, receipts: &[Receipt], now: Timestamp) -> usize {
        // The time step comes first, even for an empty batch (driving rule 3).
        let now = self.advance(now);
        receipts
            .iter()
            .filter(|r| self.ack(**r, now).is_ok())
            .count()
    }

    /// Hands the item back before its deadline. The attempt counts: at the attempt limit the
    /// item is dead-lettered with `failure.reason` and error, otherwise it becomes visible
    /// again after the backoff (or the delay `failure` names).
    ///
    /// Refused with [`ReceiptError::LeaseExpired`] once the lease has run out: that attempt
    /// was already counted as expired.
    pub fn nack(
        &mut self,
        receipt: Receipt,
        now: Timestamp,
        failure: Failure,
    ) -> Result<Nacked, ReceiptError> {
        let now = self.advance(now);
        let slot = self.held(receipt)?;
        self.stats.nacks += 1;
        self.leave_flight(slot);
        self.slots[slot].ended = LeaseEnd::Released;
        if let Some(error) = failure.error {
            self.set_error(slot, error);
        }
        Ok(self.fail_attempt(slot, now, failure.reason, failure.retry))
    }

    /// Moves the lease deadline to `now + visibility` (SQS ChangeMessageVisibility), but not
    /// past the max lease lifetime or the item's expiry (`capped` in [`Extended::Until`] says
    /// when it was cut). A visibility of zero releases the item now, as
    /// [`release`](Self::release).
    pub fn extend(
        &mut self,
        receipt: Receipt,
        now: Timestamp,
        visibility: Duration,
    ) -> Result<Extended, ReceiptError> {
        if visibility.is_zero() {
            return self.release(receipt, now).map(Extended::Released);
        }
        let now = self.advance(now);
        let slot = match self.running(receipt) {
            Some(slot) => slot,
            None => self.held(receipt)?,
        };
        let s = &mut self.slots[slot];
        let wanted = now.saturating_add(visibility);
        let deadline = wanted.min(s.lease_cap);
        let capped = deadline < wanted;
        if s.meta & LISTED != 0 {
            // On the in-flight list, whose deadlines are exact: to its new place.
            if deadline != s.last_deadline {
                s.last_deadline = deadline;
                self.reschedule_listed(slot);
                self.due = self.due.min(deadline);
            }
        } else if deadline >= s.last_deadline {
            // Later (the usual case): the lease keeps its index entry, which is never later
            // than `last_deadline` and moves on to it when it comes up (`run_due`,
            // `settle_lease_front`). No insert, no stale entry.
            s.last_deadline = deadline;
        } else {
            // Earlier: a new entry; the old one goes stale.
            s.epoch = s.epoch.wrapping_add(1);
            s.last_deadline = deadline;
            let timer = s.timer(slot, deadline);
            self.leases.insert(timer);
            self.due = self.due.min(deadline);
            if self.leases.needs_compaction(self.indexed) {
                self.compact_leases();
            }
        }
        self.stats.extends += 1;
        if capped {
            self.stats.extends_capped += 1;
            self.record(Event::ExtensionCapped {
                id: receipt.id,
                deadline,
            });
        }
        Ok(Extended::Until { deadline, capped })
    }

    /// Hands the item back at once, without an error and without backoff. The attempt
    /// counts; at the attempt limit the item is dead-lettered with [`Reason::Released`].
    pub fn release(&mut self, receipt: Receipt, now: Timestamp) -> Result<Nacked, ReceiptError> {
        let now = self.advance(now);
        let slot = self.held(receipt)?;
        self.stats.nacks += 1;
        self.leave_flight(slot);
        self.slots[slot].ended = LeaseEnd::Released;
        Ok(self.fail_attempt(slot, now, Reason::Released, Retry::After(Duration::ZERO)))
    }

    /// Gives back a lease that was never started: taken ahead (a worker pool's prefetch) and
    /// then not needed, or held so long unstarted that its worker would get too little of
    /// its visibility. The attempt does not count (the next delivery has the same attempt
    /// number) and the item is ready again at once, at its level, behind the items ready
    /// now. Counted in [`Stats::put_back`](crate::Stats::put_back), not in `nacks`.
    ///
    /// Refused with the receipt's [`ReceiptError`] unless the lease is running (an expired
    /// lease's attempt was counted when it ran out).
    pub fn put_back(&mut self, receipt: Receipt, now: Timestamp) -> Result<(), ReceiptError> {
        let now = self.advance(now);
        let slot = self.held(receipt)?;
        self.leave_flight(slot);
        self.stats.put_back += 1;
        let s = &mut self.slots[slot];
        s.ended = LeaseEnd::Released;
        s.attempts = s.attempts.saturating_sub(1);
        self.make_visible(slot, now, now);
        self.trim_indexes();
        Ok(())
    }

    /// Sends a poison item straight to the dead letters with [`Reason::Rejected`] and
    /// `error`, whatever attempts it has left. Like an ack, accepted after the deadline while
    /// nobody has leased the item again.
    pub fn dead_letter(
        &mut self,
        receipt: Receipt,
        now: Timestamp,
        error: Option<String>,
    ) -> Result<u32, ReceiptError> {
        let now = self.advance(now);
        let slot = match self.check(receipt) {
            Check::Held(slot) => {
                self.leave_flight(slot);
                slot
            }
            Check::Unclaimed(slot) => {
                self.leave_waiting(slot);
                slot
            }
            Check::Stale(err) => return Err(err),
        };
        if let Some(error) = error {
            self.set_error(slot, error);
        }
        let attempts = self.slots[slot].attempts;
        self.bury(slot, now, Reason::Rejected);
        Ok(attempts)
    }
}
