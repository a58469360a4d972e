//! What the store seam hands up: a lease just taken, a checkpoint being recorded, a
//! driver step's finding (see [`Store`](crate::Store)).

use std::future::Future;

use leaseq_core::{MessageId, Timestamp};

use crate::store_error::SettleError;

/// A lease just taken from a store: the item and what its delivery needs.
#[derive(Debug)]
pub struct Taken<T, K> {
    /// The delivery's own copy of the item.
    pub item: T,
    /// The message id (the same on every delivery of this item).
    pub id: MessageId,
    /// 1 on the first delivery, 2 on the second, ...
    pub attempt: u32,
    /// When the lease ends unless extended.
    pub deadline: Timestamp,
    /// The item's own deadline, if it was pushed with a time to live.
    pub expires_at: Option<Timestamp>,
    /// The store's handle on the lease.
    pub ticket: K,
}

/// A checkpoint being recorded ([`Store::checkpoint`](crate::Store::checkpoint)): borrows nothing from the store or
/// the ticket.
pub type Checkpointing = std::pin::Pin<Box<dyn Future<Output = Result<(), SettleError>> + Send>>;

/// What one step of the driver found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Drive {
    /// When the driver must run again by itself (`Timestamp::MAX`: only when woken).
    pub next: Timestamp,
    /// Nothing left to drive: no handle and no lease kept alive. The driver ends.
    pub done: bool,
}
