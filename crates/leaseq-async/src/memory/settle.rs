//! Settling under the memory store's lock: the one place a ticket's heartbeat
//! registration is dropped before the core settles it.

use leaseq_core::{Failure, Nacked, ReceiptError};

use super::{MemoryStore, MemoryTicket};
use crate::runtime::Runtime;

impl<T, R: Runtime> MemoryStore<T, R> {
    /// Settles `ticket` with `op` under the lock, its heartbeat registration dropped first.
    pub(super) fn settle<U>(
        &self,
        ticket: MemoryTicket,
        op: impl FnOnce(&mut leaseq_core::Queue<T>, leaseq_core::Receipt) -> Result<U, ReceiptError>,
    ) -> Result<U, ReceiptError> {
        let mut st = self.lock();
        if let Some((key, signal)) = ticket.beat {
            // The ticket's copy first, so that the signal can be kept for reuse.
            drop(signal);
            st.beats.unregister(key);
        }
        op(&mut st.core, ticket.receipt)
    }

    /// Nacks under the lock (releasing it wakes a receiver, or the driver for a later
    /// return).
    pub(super) fn hand_back_with(
        &self,
        ticket: MemoryTicket,
        failure: Failure,
    ) -> Result<Nacked, ReceiptError> {
        let now = self.rt.now();
        #[cfg(feature = "tracing")]
        let (reason, id) = (failure.reason, ticket.receipt.id());
        let r = self.settle(ticket, |core, r| core.nack(r, now, failure));
        // (A dead letter is reported by the driver, from the core's event.)
        #[cfg(feature = "tracing")]
        match r {
            Ok(ref nacked) => tracing::debug!(
                queue = self.name,
                %id,
                %reason,
                dead_lettered = matches!(nacked, Nacked::DeadLettered { .. }),
                "leaseq: item handed back"
            ),
            Err(ref e) => {
                tracing::debug!(queue = self.name, %id, error = %e, "leaseq: stale hand-back")
            }
        }
        r
    }
}
