//! What a receive hands out.

use crate::id::{MessageId, Receipt};
use crate::time::Timestamp;

/// One delivery of an item: the item, its id, the receipt to settle it with, which attempt
/// this is and when the lease runs out.
///
/// The lease carries a **clone** of the item; the queue keeps the original until the item is
/// acked or dead-lettered, so a redelivery hands out the same item again. For items that are
/// costly to clone, queue an `Arc<T>` (the async adapters do this for you): a clone is then a
/// reference-count increment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease<T> {
    /// The item.
    pub item: T,
    /// The message id (stable across redeliveries).
    pub id: MessageId,
    /// The receipt for ack, nack, extend and dead-letter.
    pub receipt: Receipt,
    /// 1 on first delivery, then 2, 3, ... (reset by a redrive).
    pub attempt: u32,
    /// When the lease expires unless extended: `now + visibility`, but never past the item's
    /// expiry or the max lease lifetime.
    pub deadline: Timestamp,
    /// The item's own deadline, if it was pushed with one. An item timeout derived from
    /// the lease should not run past it.
    pub expires_at: Option<Timestamp>,
}
