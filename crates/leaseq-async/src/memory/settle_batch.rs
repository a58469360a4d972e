//! Acking a batch under the memory store's lock: one lock and one clock reading for all of
//! it, each ticket acked by `State::ack_ticket` (settle.rs).

use std::sync::Arc;

use leaseq_core::{Acked, MessageId, ReceiptError};

use super::{MemoryStore, MemoryTicket};
use crate::runtime::Runtime;
use crate::store::Delivery;
use crate::store_error::SettleError;

impl<T, R: Runtime> MemoryStore<T, R> {
    /// [`Store::ack_many`](crate::Store::ack_many): one answer per ticket, in order.
    pub(super) fn ack_many_now(
        &self,
        tickets: Vec<MemoryTicket>,
    ) -> Vec<Result<Acked, SettleError>> {
        let now = self.rt.now();
        if self.records() {
            return tickets
                .into_iter()
                .map(|t| self.ack_recorded(t, now).map(|(acked, _item)| acked))
                .map(|r| r.map_err(SettleError::Stale))
                .collect();
        }
        let mut results = Vec::with_capacity(tickets.len());
        // The queue's copies of the acked items, dropped after the lock (not kept when
        // dropping them runs nothing: one allocation less per batch).
        let keep_items = std::mem::needs_drop::<T>();
        let mut items = Vec::with_capacity(if keep_items { tickets.len() } else { 0 });
        let mut st = self.lock();
        for ticket in tickets {
            match st.ack_ticket(ticket, now, &self.inbox) {
                Ok((acked, item)) => {
                    if keep_items {
                        items.push(item);
                    }
                    results.push(Ok(acked));
                }
                Err(e) => results.push(Err(SettleError::Stale(e))),
            }
        }
        drop(st);
        drop(items);
        results
    }
}

impl<T: Clone + Send + 'static, R: Runtime> MemoryStore<T, R> {
    /// [`Store::ack_deliveries_now`](crate::Store::ack_deliveries_now): each delivery acked
    /// where it lies in `deliveries` (its ticket taken out under the lock: no delivery moved
    /// and no vector of tickets), then the settled deliveries dropped after the lock, with
    /// their own copies of the items (user code never runs under the lock; a settled
    /// delivery hands nothing back, and its handle on this store is not the last: the
    /// caller holds one). Those of another store are moved to `foreign` after the lock.
    pub(super) fn ack_deliveries_locked(
        self: &Arc<Self>,
        deliveries: &mut Vec<Delivery<T, R, Self>>,
        foreign: &mut Vec<Delivery<T, R, Self>>,
        stale: &mut Vec<(MessageId, ReceiptError)>,
    ) -> Vec<MessageId> {
        let now = self.rt.now();
        let keep_items = std::mem::needs_drop::<T>();
        let mut items = Vec::with_capacity(if keep_items { deliveries.len() } else { 0 });
        let mut accepted = Vec::with_capacity(deliveries.len());
        // Refused at the ack, after those released already (as the two-pass ack orders them).
        let mut late = Vec::new();
        let mut any_foreign = false;
        let mut st = self.lock();
        for d in deliveries.iter_mut() {
            if !Arc::ptr_eq(d.store(), self) {
                any_foreign = true;
                continue;
            }
            let id = d.id();
            // Taken where the delivery lies, leaving it settled (its `Drop` hands nothing back).
            let ticket = match d.take_ticket() {
                Ok(ticket) => ticket,
                // Released already (an extend by zero): nothing of it is left to ack.
                Err(e) => {
                    stale.push((id, e));
                    continue;
                }
            };
            match st.ack_ticket(ticket, now, &self.inbox) {
                Ok((_, item)) => {
                    if keep_items {
                        items.push(item);
                    }
                    accepted.push(id);
                }
                Err(e) => late.push((id, e)),
            }
        }
        drop(st);
        drop(items);
        if any_foreign {
            // Another store's deliveries, untouched, in order; ours are settled.
            for d in deliveries.drain(..) {
                if !Arc::ptr_eq(d.store(), self) {
                    foreign.push(d);
                }
            }
        } else {
            deliveries.clear();
        }
        stale.append(&mut late);
        accepted
    }
}
