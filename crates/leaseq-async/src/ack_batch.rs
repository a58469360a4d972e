//! Acking many deliveries under one lock, and what came of each.

use std::sync::Arc;

use leaseq_core::{MessageId, ReceiptError};

use crate::delivery::Delivery;
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;

/// What [`LeaseQueue::ack_batch`] did with each delivery it was given.
///
/// Every delivery ends up in exactly one of three places: accepted (the item is acked),
/// stale (its receipt was refused, the reason is kept and counted in the stats), or handed
/// back untouched because it belongs to another queue.
#[must_use = "deliveries of another queue are handed back here"]
pub struct AckBatch<T, R: Runtime> {
    accepted: Vec<MessageId>,
    stale: Vec<(MessageId, ReceiptError)>,
    foreign: Vec<Delivery<T, R>>,
}

impl<T, R: Runtime> AckBatch<T, R> {
    /// How many deliveries were acked.
    pub fn accepted(&self) -> usize {
        self.accepted.len()
    }

    /// The ids of the items acked, in the order given.
    pub fn accepted_ids(&self) -> &[MessageId] {
        &self.accepted
    }

    /// The deliveries whose receipts were stale, with the reason (see [`ReceiptError`]).
    pub fn stale(&self) -> &[(MessageId, ReceiptError)] {
        &self.stale
    }

    /// Deliveries of another queue: refused, unsettled, their leases and heartbeats intact.
    pub fn foreign(&self) -> &[Delivery<T, R>] {
        &self.foreign
    }

    /// Takes the deliveries of another queue back, to settle on their own queue. Dropped
    /// with this value instead, they go back to their queue like any unsettled delivery.
    pub fn into_foreign(self) -> Vec<Delivery<T, R>> {
        self.foreign
    }

    /// Whether every delivery given was acked.
    pub fn all_accepted(&self) -> bool {
        self.stale.is_empty() && self.foreign.is_empty()
    }
}

impl<T, R: Runtime> std::fmt::Debug for AckBatch<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AckBatch")
            .field("accepted", &self.accepted)
            .field("stale", &self.stale)
            .field("foreign", &self.foreign.len())
            .finish()
    }
}

impl<T, R: Runtime> LeaseQueue<T, R> {
    /// Acks a batch of deliveries under one lock and one clock reading (taken at this call:
    /// late acks are judged exactly, as by [`Delivery::ack`]).
    ///
    /// A delivery of another queue is refused and handed back in
    /// [`AckBatch::into_foreign`], untouched: its lease and heartbeat stay as they were, and
    /// nothing of this queue changes on its account.
    pub fn ack_batch(
        &self,
        deliveries: impl IntoIterator<Item = Delivery<T, R>>,
    ) -> AckBatch<T, R> {
        // Held until the lock is released: dropping a delivery drops its item's `Arc`, the
        // last reference once acked, and the item's own `Drop` must not run under the lock.
        let (mut ours, foreign): (Vec<_>, Vec<_>) = deliveries
            .into_iter()
            .partition(|d| Arc::ptr_eq(d.shared(), &self.shared));
        let mut report = AckBatch {
            accepted: Vec::with_capacity(ours.len()),
            stale: Vec::new(),
            foreign,
        };
        let now = self.shared.rt.now();
        // The queue's copies of the acked items, dropped with the deliveries after the lock.
        let mut acked_items = Vec::with_capacity(ours.len());
        let mut st = self.shared.lock();
        for d in &mut ours {
            let id = d.id();
            match d.settle_locked(&mut st, |core, r| core.ack_take(r, now)) {
                Ok((_, item)) => {
                    report.accepted.push(id);
                    acked_items.push(item);
                }
                Err(e) => report.stale.push((id, e)),
            }
        }
        drop(st);
        drop(ours);
        drop(acked_items);
        report
    }
}
