//! What a pool handler is given.

use leaseq_core::{MessageId, Timestamp};

use crate::lease_lost::LeaseLost;

/// One item handed to a pool handler.
///
/// The handler owns it, so its future can be `'static`. The pool keeps the delivery and
/// settles it from the handler's result.
#[non_exhaustive]
pub struct Job<T> {
    /// The item (the handler's own copy).
    pub item: T,
    /// Its message id (the same on every delivery).
    pub id: MessageId,
    /// 1 on the first delivery, 2 on the second, ...
    pub attempt: u32,
    /// When this handling's time is up: the item timeout, or the lease deadline without
    /// one.
    pub deadline: Timestamp,
    /// Completes if the lease is lost while the handler runs (an extension refused, the max
    /// lease lifetime reached, or, without heartbeat, the lease deadline passed): the item
    /// will be redone elsewhere, so a handler may stop early.
    pub lease_lost: LeaseLost,
}

impl<T> std::fmt::Debug for Job<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("id", &self.id)
            .field("attempt", &self.attempt)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}
