//! What the seam's provided methods do for a store that does not override them, where that
//! is more than a line: a shaped take through a vector, checkpoints refused, a snooze as a
//! counted retry.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use leaseq_core::{Failure, Reason, Snoozed};

use super::Store;
use crate::progress::{LeaseKey, Progress};
use crate::store_error::{SettleError, StoreError};
use crate::taken::{Checkpointing, Taken};

/// [`Store::poll_take_into`]: [`Store::poll_take`] into a vector, then each lease shaped
/// into `out` in order.
pub(super) fn take_then_shape<T, S: Store<T>, D>(
    store: &Arc<S>,
    waiting: &mut S::Waiting,
    cx: &mut Context<'_>,
    max: usize,
    heartbeat: bool,
    out: &mut Vec<D>,
    shape: impl FnMut(Taken<T, S::Ticket>) -> D,
) -> Poll<bool> {
    let mut taken = Vec::new();
    let r = store.poll_take(waiting, cx, max, heartbeat, &mut taken);
    out.extend(taken.into_iter().map(shape));
    r
}

/// [`Store::checkpoint`] on a store that keeps none: refused, not done.
pub(super) fn no_checkpoints(lease: LeaseKey, progress: Progress) -> Checkpointing {
    let _ = (lease, progress);
    Box::pin(std::future::ready(Err(SettleError::Store(
        StoreError::not_done("this store keeps no checkpoints"),
    ))))
}

/// [`Store::snooze`] on a store without snooze: a counted retry after `delay`
/// ([`Snoozed::Counted`]).
pub(super) fn snooze_as_retry<T, S: Store<T>>(
    store: &S,
    ticket: S::Ticket,
    delay: Duration,
) -> impl Future<Output = Result<Snoozed, SettleError>> + Send + use<'_, T, S> {
    let failure = Failure::with_reason(Reason::Released)
        .and_error("snoozed on a store without snooze")
        .retry_after(delay);
    let nack = store.nack(ticket, failure);
    async move { nack.await.map(Snoozed::Counted) }
}
