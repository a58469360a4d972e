//! [`Delivery`], the struct: what a lease held above the store is made of, the accessors the
//! seam's batch hooks use (`Store::ack_deliveries_now`, `spare_deliveries`), and its `Drop`
//! (an unsettled lease goes back through [`Store::hand_back`]). The seam owns it so that it
//! names no type of the layer above; its API (settles, checkpoints) is the queue layer's, in
//! `delivery.rs` and `delivery/checkpoint.rs`. Its default store type is the memory store's
//! state (`memory/mod.rs`, which names nothing of the seam).

use std::sync::Arc;

use leaseq_core::{MessageId, ReceiptError, Timestamp};

use super::{Store, Taken};
use crate::memory::MemoryStore;
use crate::runtime::Runtime;

/// An item on lease from a [`LeaseQueue`](crate::LeaseQueue).
///
/// Settle it with [`ack`](Self::ack) when the work is done, or hand it back with
/// [`nack`](Self::nack) / [`nack_with`](Self::nack_with), or declare it poison with
/// [`dead_letter`](Self::dead_letter); each consumes the delivery. A delivery dropped
/// unsettled (a panic, a cancelled task, an early return) goes back to the queue at once with
/// reason [`Dropped`](leaseq_core::Reason::Dropped), and that counts as an attempt.
///
/// A settle with a stale receipt (the lease ran out and the item went to someone else) is a
/// typed [`SettleError::Stale`](crate::SettleError::Stale) with its [`ReceiptError`], never
/// a panic; a store that failed says [`SettleError::Store`](crate::SettleError::Store) (not
/// done, or outcome unknown).
///
/// ```
/// use std::time::Duration;
/// use leaseq_async::{Config, LeaseQueue, Nacked, Page, Reason, SimRuntime};
///
/// let rt = SimRuntime::new();
/// rt.block_on({
///     let rt = rt.clone();
///     async move {
///         let queue = LeaseQueue::with_runtime(rt, Config::new(Duration::from_secs(5)).with_max_attempts(3))
///             .unwrap();
///         queue.try_push(17u32).unwrap();
///
///         // Dropped unsettled (say, the task was cancelled): back at once, attempt counted.
///         drop(queue.receive().await.unwrap());
///         let d = queue.receive().await.unwrap();
///         assert_eq!(d.attempt(), 2);
///
///         // A retryable failure: back after the backoff, with the error recorded.
///         assert!(matches!(d.nack("disk full").await.unwrap(), Nacked::Retrying { .. }));
///
///         // Poison: straight to the dead letters.
///         let d = queue.receive().await.unwrap();
///         d.dead_letter("malformed payload").await.unwrap();
///         let dead = queue.dead_letters(Page::ALL).await.unwrap();
///         assert_eq!(dead[0].reason, Reason::Rejected);
///         assert_eq!(dead[0].last_error.as_deref(), Some("malformed payload"));
///     }
/// });
/// ```
pub struct Delivery<T, R: Runtime, S: Store<T, Runtime = R> = MemoryStore<T, R>> {
    pub(crate) store: Arc<S>,
    /// `None` only once a pool has moved the item into its handler's `Job`.
    pub(crate) item: Option<T>,
    pub(crate) id: MessageId,
    pub(crate) attempt: u32,
    pub(crate) deadline: Timestamp,
    /// The item's own deadline, if `expires`: a flag beside `attempt` (in its padding)
    /// rather than an `Option`'s own word, so that a delivery is 16 bytes smaller to move.
    /// `Timestamp::MAX` without one: the core's own "no expiry", so that making it from the
    /// core's lease folds to a plain copy.
    pub(crate) expires_at: Timestamp,
    pub(crate) expires: bool,
    /// `None` once settled.
    pub(crate) ticket: Option<S::Ticket>,
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> Delivery<T, R, S> {
    pub(crate) fn new(store: Arc<S>, taken: Taken<T, S::Ticket>) -> Self {
        Delivery {
            store,
            item: Some(taken.item),
            id: taken.id,
            attempt: taken.attempt,
            deadline: taken.deadline,
            expires_at: taken.expires_at.unwrap_or(Timestamp::MAX),
            expires: taken.expires_at.is_some(),
            ticket: Some(taken.ticket),
        }
    }

    /// The store this delivery's lease is from: for a store's own API on the lease (with
    /// [`into_ticket`](Self::into_ticket)), or to tell which queue a delivery came from.
    pub fn store(&self) -> &Arc<S> {
        &self.store
    }

    /// The message id, the same on every delivery of this item.
    pub fn id(&self) -> MessageId {
        self.id
    }

    /// The ticket, once: every settle consumes it, the delivery left settled where it lies
    /// (its `Drop` then hands nothing back).
    pub(crate) fn take_ticket(&mut self) -> Result<S::Ticket, ReceiptError> {
        self.ticket.take().ok_or(ReceiptError::Released(self.id))
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> Drop for Delivery<T, R, S> {
    // Inlined, the hand-back out of line: dropping a settled delivery (a batch ack drops
    // its whole vector of them) is then a test and the store handle's release.
    #[inline]
    fn drop(&mut self) {
        if self.ticket.is_some() {
            self.hand_back_unsettled();
        }
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> Delivery<T, R, S> {
    /// `drop` of a delivery still unsettled: its lease goes back to the queue.
    #[cold]
    #[inline(never)]
    fn hand_back_unsettled(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            self.store.hand_back(ticket);
        }
    }
}
