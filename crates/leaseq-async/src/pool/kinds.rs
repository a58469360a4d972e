//! Retry rules per job kind in a pool: each item's [`KindPolicy`], chosen before its handler
//! runs, sets its time limit and decides how each failure of it is settled.
//!
//! The store applies the queue's own rules on every nack; a kind's rules are applied before
//! it, with [`KindPolicy::resolve`] and the queue's [`RetryPolicy`] (from
//! [`Store::retry_policy`](crate::Store::retry_policy)), as a [`Failure`] whose retry is
//! exact ([`Retry::After`](leaseq_core::Retry::After)) or [`Retry::Never`](leaseq_core::Retry::Never):
//! the store reaches the kind's verdict unchanged. A pool without kind rules never comes
//! here.

use std::sync::Arc;

use leaseq_core::{Failure, KindPolicy, RetryPolicy};
use parking_lot::Mutex;

/// Chooses an item's kind rules.
pub(crate) type KindOf<T> = Arc<dyn Fn(&T) -> KindPolicy + Send + Sync>;

/// A pool's kind rules: the choice per item and the queue's retry policy.
pub(crate) struct Kinds<T> {
    /// Each item's rules.
    of: KindOf<T>,
    /// The queue's retry policy, its jitter's PRNG shared by the pool's workers (locked
    /// once per failure, never for a success); `None` when the store tells none, and then
    /// only the kinds' timeouts apply.
    queue: Option<Mutex<RetryPolicy>>,
}

impl<T> Kinds<T> {
    pub(crate) fn new(of: KindOf<T>, queue: Option<RetryPolicy>) -> Self {
        Kinds {
            of,
            queue: queue.map(Mutex::new),
        }
    }

    /// `item`'s kind rules, its kind's timeout (if it has one) put in `limit`. Out of line:
    /// a pool without kind rules never comes here.
    #[cold]
    #[inline(never)]
    pub(crate) fn choose(&self, item: &T, limit: &mut Option<std::time::Duration>) -> KindPolicy {
        let kind = (self.of)(item);
        if let Some(timeout) = kind.timeout() {
            *limit = Some(timeout);
        }
        kind
    }

    /// The failure to nack with for `failure` of an item of kind `kind` at delivery
    /// `attempt`: its kind's verdict (backoff, last attempt, the handler's own delay or
    /// "never") as an exact retry or a dead letter. Expiry is left to the store, which
    /// dead-letters an expired item whatever the failure says.
    pub(crate) fn resolve(&self, kind: &KindPolicy, attempt: u32, failure: Failure) -> Failure {
        match &self.queue {
            Some(queue) => kind.resolve(&mut queue.lock(), attempt, false, failure),
            None => failure,
        }
    }
}
