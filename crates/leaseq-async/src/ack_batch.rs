//! Acking many deliveries in one step, and what came of each.

use std::sync::Arc;

use leaseq_core::{MessageId, ReceiptError};

use crate::store_error::{SettleError, StoreError};

use crate::delivery::Delivery;
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;
use crate::store::Store;

/// What [`LeaseQueue::ack_batch`] did with each delivery it was given.
///
/// Every delivery ends up in exactly one of four places: accepted (the item is acked),
/// stale (its receipt was refused, the reason is kept and counted in the stats), failed (the
/// store could not make the ack durable: not done, or an outcome it cannot know), or handed
/// back untouched because it belongs to another queue.
#[must_use = "deliveries of another queue are handed back here"]
pub struct AckBatch<T, R: Runtime, S: Store<T, Runtime = R>> {
    accepted: Vec<MessageId>,
    stale: Vec<(MessageId, ReceiptError)>,
    failed: Vec<(MessageId, StoreError)>,
    foreign: Vec<Delivery<T, R, S>>,
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> AckBatch<T, R, S> {
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

    /// The deliveries whose acks the store could not make durable, with its error (see
    /// [`StoreError::is_outcome_unknown`]).
    pub fn failed(&self) -> &[(MessageId, StoreError)] {
        &self.failed
    }

    /// Deliveries of another queue: refused, unsettled, their leases and heartbeats intact.
    pub fn foreign(&self) -> &[Delivery<T, R, S>] {
        &self.foreign
    }

    /// Takes the deliveries of another queue back, to settle on their own queue. Dropped
    /// with this value instead, they go back to their queue like any unsettled delivery.
    pub fn into_foreign(self) -> Vec<Delivery<T, R, S>> {
        self.foreign
    }

    /// Whether every delivery given was acked.
    pub fn all_accepted(&self) -> bool {
        self.stale.is_empty() && self.failed.is_empty() && self.foreign.is_empty()
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> std::fmt::Debug for AckBatch<T, R, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AckBatch")
            .field("accepted", &self.accepted)
            .field("stale", &self.stale)
            .field("failed", &self.failed)
            .field("foreign", &self.foreign.len())
            .finish()
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> LeaseQueue<T, R, S> {
    /// Acks a batch of deliveries in one step with one clock reading (taken at this call:
    /// late acks are judged exactly, as by [`Delivery::ack`]).
    ///
    /// A delivery of another queue is refused and handed back in
    /// [`AckBatch::into_foreign`], untouched: its lease and heartbeat stay as they were, and
    /// nothing of this queue changes on its account.
    pub async fn ack_batch(
        &self,
        deliveries: impl IntoIterator<Item = Delivery<T, R, S>>,
    ) -> AckBatch<T, R, S> {
        // Gathered into a vector first: at no cost when given one (`Vec::into_iter`
        // collects in place), and its room is then kept by the store for a later batch
        // receive.
        let mut deliveries: Vec<Delivery<T, R, S>> = deliveries.into_iter().collect();
        let mut foreign = Vec::new();
        let mut stale = Vec::new();
        // A store that settles at once does it all in one pass under its lock.
        if let Some(accepted) =
            self.store
                .ack_deliveries_now(&mut deliveries, &mut foreign, &mut stale)
        {
            self.store.keep_deliveries(deliveries);
            return AckBatch {
                accepted,
                stale,
                failed: Vec::new(),
                foreign,
            };
        }
        // Otherwise one pass: deliveries of another queue set aside, ours taken apart. The
        // deliveries' own copies of the items are dropped at the end: an item's `Drop` that
        // panics must not strand the tickets gathered so far.
        // (Items without a `Drop` are not kept: dropping them runs nothing, and their vector
        // would be one allocation more per batch.)
        let hint = deliveries.len();
        let keep_items = std::mem::needs_drop::<T>();
        let (mut ids, mut tickets) = (Vec::with_capacity(hint), Vec::with_capacity(hint));
        let mut items = Vec::with_capacity(if keep_items { hint } else { 0 });
        let mut failed = Vec::new();
        for mut d in deliveries.drain(..) {
            if !Arc::ptr_eq(d.store(), &self.store) {
                foreign.push(d);
                continue;
            }
            let id = d.id();
            let item = d.take_item();
            if keep_items {
                items.push(item);
            }
            match d.into_ticket() {
                Some(ticket) => {
                    ids.push(id);
                    tickets.push(ticket);
                }
                // Released already (an extend by zero): nothing of it is left to ack.
                None => stale.push((id, ReceiptError::Released(id))),
            }
        }
        self.store.keep_deliveries(deliveries);
        let results = self.store.ack_many(tickets).await;
        drop(items);
        // `ids` becomes the accepted ones, in place.
        let mut results = results.into_iter();
        // (A store answers once per ticket; a missing answer would be no ack.)
        ids.retain(|id| {
            match results
                .next()
                .unwrap_or(Err(SettleError::Stale(ReceiptError::Unknown)))
            {
                Ok(_) => true,
                Err(SettleError::Stale(e)) => {
                    stale.push((*id, e));
                    false
                }
                Err(SettleError::Store(e)) => {
                    failed.push((*id, e));
                    false
                }
                // (An ack is offered by every store; this is for completeness.)
                Err(SettleError::Unsupported(what)) => {
                    failed.push((*id, crate::store_error::StoreError::not_done(what)));
                    false
                }
            }
        });
        AckBatch {
            accepted: ids,
            stale,
            failed,
            foreign,
        }
    }
}
