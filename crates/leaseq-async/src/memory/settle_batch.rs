//! Acking a batch under the memory store's lock: one lock and one clock reading for all of
//! it, each ticket's heartbeat registration dropped before the core settles it.

use leaseq_core::{Acked, MessageId, ReceiptError};

use super::{MemoryStore, MemoryTicket};
use crate::runtime::Runtime;
use crate::store_error::SettleError;

impl<T, R: Runtime> MemoryStore<T, R> {
    /// [`Store::ack_many`](crate::Store::ack_many): one answer per ticket, in order.
    pub(super) fn ack_many_now(
        &self,
        tickets: Vec<MemoryTicket>,
    ) -> Vec<Result<Acked, SettleError>> {
        let now = self.rt.now();
        let mut results = Vec::with_capacity(tickets.len());
        // The queue's copies of the acked items, dropped after the lock (not kept when
        // dropping them runs nothing: one allocation less per batch).
        let keep_items = std::mem::needs_drop::<T>();
        let mut items = Vec::with_capacity(if keep_items { tickets.len() } else { 0 });
        let mut st = self.lock();
        for ticket in tickets {
            if let Some((key, signal)) = ticket.beat {
                // The ticket's copy first, so that the signal can be kept for reuse.
                drop(signal);
                st.beats.unregister(key);
            }
            match st.core.ack_take(ticket.receipt, now) {
                Ok((acked, item)) => {
                    st.progress.remove(ticket.receipt.id());
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

    /// [`Store::ack_many_by_id`](crate::Store::ack_many_by_id): the ids of the acked ones
    /// in order (no vector of answers); the refused ones pushed onto `stale`. Never fails
    /// otherwise. (A plain loop into a new vector: collecting the ids in the place of
    /// `acks` cost 3 instructions per item more.)
    pub(super) fn ack_batch_now(
        &self,
        acks: Vec<(MessageId, MemoryTicket)>,
        stale: &mut Vec<(MessageId, ReceiptError)>,
    ) -> Vec<MessageId> {
        let now = self.rt.now();
        let keep_items = std::mem::needs_drop::<T>();
        let mut items = Vec::with_capacity(if keep_items { acks.len() } else { 0 });
        let mut st = self.lock();
        let mut accepted = Vec::with_capacity(acks.len());
        for (id, ticket) in acks {
            if let Some((key, signal)) = ticket.beat {
                // The ticket's copy first, so that the signal can be kept for reuse.
                drop(signal);
                st.beats.unregister(key);
            }
            match st.core.ack_take(ticket.receipt, now) {
                Ok((_, item)) => {
                    st.progress.remove(ticket.receipt.id());
                    if keep_items {
                        items.push(item);
                    }
                    accepted.push(id);
                }
                Err(e) => stale.push((id, e)),
            }
        }
        drop(st);
        drop(items);
        accepted
    }
}
