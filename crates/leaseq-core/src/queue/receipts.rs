//! Receipts: what a receipt points at, and why a stale one is stale.

use super::{Fate, LeaseEnd, Queue, State};
use crate::error::ReceiptError;
use crate::id::Receipt;

/// What a receipt points at.
pub(super) enum Check {
    /// The lease is running.
    Held(usize),
    /// The lease ran out and nobody took the item since: an ack is still welcome.
    Unclaimed(usize),
    Stale(ReceiptError),
}

impl<T> Queue<T> {
    /// Whether `receipt`'s lease is running at `now` (the time applied first): `Ok`, or the
    /// [`ReceiptError`] a settle would get. Changes nothing else: for a store that records
    /// something about a lease (a handler's checkpoint) only while its holder still holds it.
    pub fn check_lease(
        &mut self,
        receipt: Receipt,
        now: crate::Timestamp,
    ) -> Result<(), ReceiptError> {
        self.advance(now);
        if self.running(receipt).is_some() {
            return Ok(());
        }
        self.held(receipt).map(|_| ())
    }

    pub(super) fn check(&mut self, r: Receipt) -> Check {
        let found = if r.queue == self.tag {
            self.slots.get(r.slot as usize)
        } else {
            None
        };
        let Some(s) = found else {
            self.stats.unknown_receipts += 1;
            return Check::Stale(ReceiptError::Unknown);
        };
        if s.state != State::Free && s.id == r.id.0 {
            if r.lease > s.leases || r.lease == 0 {
                self.stats.unknown_receipts += 1;
                return Check::Stale(ReceiptError::Unknown);
            }
            if r.lease < s.leases {
                return Check::Stale(ReceiptError::Redelivered(r.id));
            }
            return match (s.state, s.ended) {
                (State::InFlight, _) => Check::Held(r.slot as usize),
                (_, LeaseEnd::Expired) => Check::Unclaimed(r.slot as usize),
                (_, LeaseEnd::Released) => Check::Stale(ReceiptError::Released(r.id)),
                // Waiting with no lease ended since: a redrive put it back (`occupy` resets
                // `ended`), so this receipt's lease ended in the dead letters.
                (_, LeaseEnd::None) => Check::Stale(ReceiptError::DeadLettered(r.id)),
            };
        }
        match s.prev_fate {
            Some(Fate::Acked) if s.prev_id == r.id.0 => {
                Check::Stale(ReceiptError::AlreadyAcked(r.id))
            }
            Some(Fate::DeadLettered) if s.prev_id == r.id.0 => {
                Check::Stale(ReceiptError::DeadLettered(r.id))
            }
            Some(Fate::Cancelled) if s.prev_id == r.id.0 => {
                Check::Stale(ReceiptError::Cancelled(r.id))
            }
            _ => {
                self.stats.unknown_receipts += 1;
                Check::Stale(ReceiptError::Unknown)
            }
        }
    }

    /// The slot of the running lease `r` was issued for: `check`'s `Held` case alone, inlined
    /// into the hot paths.
    #[inline]
    pub(super) fn running(&self, r: Receipt) -> Option<usize> {
        let s = self.slots.get(r.slot as usize)?;
        (r.queue == self.tag && s.state == State::InFlight && s.id == r.id.0 && s.leases == r.lease)
            .then_some(r.slot as usize)
    }

    /// The slot of a running lease, or why there is none.
    pub(super) fn held(&mut self, r: Receipt) -> Result<usize, ReceiptError> {
        match self.check(r) {
            Check::Held(slot) => Ok(slot),
            Check::Unclaimed(_) => Err(ReceiptError::LeaseExpired(r.id)),
            Check::Stale(e) => Err(e),
        }
    }
}
