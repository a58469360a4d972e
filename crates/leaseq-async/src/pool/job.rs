//! What a pool handler is given.

use std::sync::Arc;
use std::time::Duration;

use leaseq_core::{MessageId, Timestamp};

use crate::lease_lost::{LeaseLost, Timing};

/// One item handed to a pool handler.
///
/// The handler owns it, so its future can be `'static`. The pool keeps the delivery and
/// settles it from the handler's result. Async and blocking handlers get the same context:
/// id, attempt, [`time_left`](Self::time_left) and the lease-lost signal
/// ([`lease_lost`](Self::lease_lost), [`is_lease_lost`](Self::is_lease_lost)).
#[non_exhaustive]
pub struct Job<T> {
    /// The item (the handler's own copy).
    pub item: T,
    /// Its message id (the same on every delivery).
    pub id: MessageId,
    /// 1 on the first delivery, 2 on the second, ...
    pub attempt: u32,
    /// When this handling's time is up, on the queue's clock: the item timeout, or the lease
    /// deadline without one. [`time_left`](Self::time_left) says it as a duration.
    pub deadline: Timestamp,
    /// Completes if the lease is lost while the handler runs (an extension refused, the max
    /// lease lifetime reached, or, without heartbeat, the lease deadline passed): the item
    /// will be redone elsewhere, so a handler may stop early.
    pub lease_lost: LeaseLost,
    pub(crate) timing: Arc<dyn Timing>,
}

impl<T> Job<T> {
    /// The same job holding `item` instead, and the item it held (for a router, which
    /// hands a kind's handler its decoded args).
    #[cfg_attr(not(feature = "router"), allow(dead_code))]
    pub(crate) fn replace_item<U>(self, item: U) -> (T, Job<U>) {
        let Job {
            item: held,
            id,
            attempt,
            deadline,
            lease_lost,
            timing,
        } = self;
        let job = Job {
            item,
            id,
            attempt,
            deadline,
            lease_lost,
            timing,
        };
        (held, job)
    }

    /// How long this handling has left before its item timeout (or, without one, its lease
    /// deadline); zero once it has passed.
    pub fn time_left(&self) -> Duration {
        self.deadline.saturating_duration_since(self.timing.now())
    }

    /// Whether the lease is lost already (see [`lease_lost`](Self::lease_lost)): for a
    /// blocking handler to check between steps of long work.
    pub fn is_lease_lost(&self) -> bool {
        self.lease_lost.is_lost()
    }
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
