//! [`BatchError`]: a batch push that stopped at a refusal, with everything handed back.

use std::fmt;

use leaseq_core::MessageId;

use crate::error::PushError;

/// A batch push ([`LeaseQueue::push_batch`](crate::LeaseQueue::push_batch),
/// [`try_push_batch`](crate::LeaseQueue::try_push_batch)) stopped at a refusal: the ids of
/// the items accepted before it, the refusal (with the refused item inside), and the items
/// after it, untried, handed back in order. Nothing is lost: `accepted` are queued, the
/// rest are yours again ([`into_items`](Self::into_items)).
pub struct BatchError<T> {
    /// The ids of the items accepted before the refusal, in order.
    pub accepted: Vec<MessageId>,
    /// Why the next item was refused; the item is inside
    /// ([`PushError::into_item`]). With [`PushError::Unconfirmed`], no item was refused: the
    /// accepted ones could not be confirmed durable (their outcome is unknown).
    pub error: PushError<T>,
    /// The items after the refused one, not tried, in order.
    pub rest: Vec<T>,
}

impl<T> BatchError<T> {
    /// Every item not queued, in order: the refused one, then the rest.
    pub fn into_items(self) -> Vec<T> {
        let mut items = Vec::with_capacity(self.rest.len() + 1);
        items.extend(self.error.into_item());
        items.extend(self.rest);
        items
    }
}

impl<T> fmt::Debug for BatchError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchError")
            .field("accepted", &self.accepted.len())
            .field("error", &self.error)
            .field("rest", &self.rest.len())
            .finish()
    }
}

impl<T> fmt::Display for BatchError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "batch push stopped after {} accepted item(s): {} ({} more handed back)",
            self.accepted.len(),
            self.error,
            self.rest.len()
        )
    }
}

impl<T: 'static> std::error::Error for BatchError<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}
