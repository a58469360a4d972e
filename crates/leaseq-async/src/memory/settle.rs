//! Settling under the memory store's lock: the one place a ticket's heartbeat
//! registration is dropped before the core settles it.

use leaseq_core::{Failure, Nacked, ReceiptError};

use super::{MemoryStore, MemoryTicket, State};
use crate::runtime::Runtime;

impl<T> State<T> {
    /// Acks `ticket` under the lock this state is behind: its heartbeat released first, the
    /// item's checkpoint forgotten (one emptiness check when nobody checkpoints), a job of
    /// the dependency graph's dependents pushed (one emptiness check while no graph is in
    /// use; `inbox` gives their ids); hands the
    /// queue's copy of the item out, to be dropped after the lock. Every ack of the memory
    /// store comes here, one at a time or in a batch. Always inlined: out of line, its
    /// call costs the single ack about 24 instructions.
    #[inline(always)]
    pub(super) fn ack_ticket(
        &mut self,
        ticket: MemoryTicket,
        now: leaseq_core::Timestamp,
        inbox: &super::inbox::Inbox<T>,
    ) -> Result<(leaseq_core::Acked, T), ReceiptError> {
        // Taken apart first: the receipt is then read where it is passed, not copied.
        let MemoryTicket { receipt, beat } = ticket;
        if let Some((key, signal)) = beat {
            self.beats.release(key, signal);
        }
        let done = self.core.ack_take(receipt, now)?;
        self.progress.remove(receipt.id());
        // A job of the dependency graph: its dependents pushed under this same lock.
        if self.graph.graph.tracks(receipt.id()) {
            self.graph_settle(receipt.id(), leaseq_core::graph::Fate::Acked, inbox);
        }
        Ok(done)
    }
}

impl<T, R: Runtime> MemoryStore<T, R> {
    /// Settles `ticket` with `op` under the lock, its heartbeat registration dropped first.
    /// With the dependency graph in use, a dead letter `op` made is told to it (and the
    /// dependents it releases pushed) before the lock is released, not at the driver's
    /// next step.
    pub(super) fn settle<U>(
        &self,
        ticket: MemoryTicket,
        op: impl FnOnce(&mut leaseq_core::Queue<T>, leaseq_core::Receipt) -> Result<U, ReceiptError>,
    ) -> Result<U, ReceiptError> {
        let mut st = self.lock();
        if let Some((key, signal)) = ticket.beat {
            st.beats.release(key, signal);
        }
        let r = op(&mut st.core, ticket.receipt);
        if st.graph.on && st.core.has_noted_dead() {
            self.record_dead(&mut st);
        }
        r
    }

    /// [`Store::dead_letter`](crate::Store::dead_letter): the item to the dead letters at
    /// once with `error`; the attempts it had.
    pub(super) fn dead_letter_now(
        &self,
        ticket: MemoryTicket,
        error: String,
    ) -> Result<u32, ReceiptError> {
        let now = self.rt.now();
        let error = Some(error);
        self.settle(ticket, |core, r| core.dead_letter(r, now, error))
    }

    /// [`Store::snooze`](crate::Store::snooze): the item back, visible after `delay`, its
    /// attempt not counted.
    pub(super) fn snooze_now(
        &self,
        ticket: MemoryTicket,
        delay: std::time::Duration,
    ) -> Result<leaseq_core::Snoozed, ReceiptError> {
        let now = self.rt.now();
        self.settle(ticket, |core, r| core.snooze(r, now, delay))
    }

    /// Acks under the lock ([`State::ack_ticket`]); hands the queue's copy of the item out,
    /// to be dropped after the lock.
    #[inline]
    pub(super) fn ack_locked(
        &self,
        ticket: MemoryTicket,
        now: leaseq_core::Timestamp,
    ) -> Result<(leaseq_core::Acked, T), ReceiptError> {
        self.lock().ack_ticket(ticket, now, &self.inbox)
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use leaseq_core::Config;

    use crate::{LeaseQueue, SimRuntime};

    /// Every way a heartbeat lease is settled drops the ticket's copy of its signal before
    /// unregistering it, so the registration is its last holder and the signal is kept for
    /// the next lease (no allocation per lease on a busy pool).
    #[test]
    fn settled_heartbeat_leases_keep_their_signals_for_reuse() {
        let rt = SimRuntime::new();
        rt.block_on({
            let rt = rt.clone();
            async move {
                let q = LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(9)))
                    .unwrap();
                for n in 0..4u32 {
                    q.try_push(n).unwrap();
                }
                let spare = |q: &LeaseQueue<u32, SimRuntime>| q.store().lock().beats.spare_len();
                let d = q.receive_with_heartbeat().await.unwrap();
                d.ack().await.unwrap();
                assert_eq!(spare(&q), 1, "ack");
                let d = q.receive_with_heartbeat().await.unwrap();
                d.nack("again").await.unwrap();
                assert_eq!(spare(&q), 1, "nack (the ack's signal reused, then kept)");
                let a = q.receive_with_heartbeat().await.unwrap();
                let b = q.receive_with_heartbeat().await.unwrap();
                assert_eq!(spare(&q), 0);
                assert!(q.ack_batch(vec![a, b]).await.all_accepted());
                assert_eq!(spare(&q), 2, "ack_batch");
            }
        });
    }
}
