//! How a worker settles an item once its handler is done: the settle made at once, its
//! answer counted by the worker when the store gives it at once (the memory store), and
//! otherwise by the pool's completer, so that the worker goes on without waiting for a
//! commit.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Context;
use std::time::Duration;

use futures::FutureExt;
use leaseq_core::{Failure, KindPolicy, ReceiptError};

use crate::delivery::Delivery;
use crate::job_error::JobError;
use crate::pool::completer::Completer;
use crate::pool::kinds::Kinds;
use crate::pool::stats::Counters;
use crate::pool::PoolShared;
use crate::runtime::{BoxFuture, Runtime};
use crate::store::Store;
use crate::store_error::SettleError;

/// How one handling ended.
pub(crate) enum Ended {
    Done(Result<(), JobError>),
    Panicked(String),
    TimedOut(Duration),
}

/// The settle a handling's end calls for, decided before the settle is made.
pub(crate) enum Settle {
    Ack,
    DeadLetter(String),
    Nack(Failure),
    /// `JobError::snooze`: put back uncounted for this long (a counted retry after it on a
    /// store without snooze).
    Snooze(Duration),
}

impl Settle {
    /// The settle for `ended` at delivery `attempt`, under the item's `kind` rules if the
    /// pool has kind rules.
    #[inline]
    pub(crate) fn of<T>(
        pool: &PoolShared<T>,
        ended: Ended,
        kind: Option<&KindPolicy>,
        attempt: u32,
    ) -> Settle {
        match ended {
            Ended::Done(Ok(())) => Settle::Ack,
            ended => Settle::failed(ended, pool.kinds.as_ref().zip(kind), attempt),
        }
    }

    /// The settle for `ended`, a handling that did not succeed, at delivery `attempt`,
    /// under `kind`'s rules when the pool has kind rules (else the queue's, applied by the
    /// store). Out of line: a success never comes here.
    #[cold]
    #[inline(never)]
    fn failed<T>(ended: Ended, kind: Option<(&Kinds<T>, &KindPolicy)>, attempt: u32) -> Settle {
        let failure = match ended {
            Ended::Done(Ok(())) => return Settle::Ack,
            Ended::Done(Err(e)) if e.is_permanent() => return Settle::DeadLetter(e.into_message()),
            Ended::Done(Err(e)) if e.snooze_delay().is_some() => {
                return Settle::Snooze(e.snooze_delay().unwrap_or_default())
            }
            Ended::Done(Err(e)) => e.into_failure(),
            Ended::Panicked(message) => Failure::panicked(message),
            Ended::TimedOut(limit) => {
                #[cfg(feature = "tracing")]
                tracing::debug!(limit = ?limit, "leaseq: item timed out");
                Failure::timed_out().and_error(format!("timed out after {limit:?}"))
            }
        };
        Settle::Nack(match kind {
            Some((kinds, kind)) => kinds.resolve(kind, attempt, failure),
            None => failure,
        })
    }
}

/// Makes `settle` with a delivery's `ticket` (or its refusal, if it had none) on `store`,
/// which the future owns: for the completer, which polls it after the worker has moved on.
async fn settle<T: Send + 'static, R: Runtime, S: Store<T, Runtime = R>>(
    store: Arc<S>,
    ticket: Result<S::Ticket, ReceiptError>,
    settle: Settle,
) -> Option<SettleError> {
    let ticket = match ticket {
        Ok(ticket) => ticket,
        Err(e) => return Some(e.into()),
    };
    match settle {
        Settle::Ack => store.ack(ticket).await.err(),
        Settle::DeadLetter(message) => store.dead_letter(ticket, message).await.err(),
        Settle::Nack(failure) => store.nack(ticket, failure).await.err(),
        Settle::Snooze(delay) if store.snoozes() => store.snooze(ticket, delay).await.err(),
        Settle::Snooze(delay) => store.nack(ticket, snoozed(delay)).await.err(),
    }
}

/// Counts a settle's answer in worker `index`'s shard (a panic in the settle, from an
/// item's `Drop` as the ack drops the queue's copy, is counted too: the settle itself went
/// through).
fn count<T>(
    pool: &PoolShared<T>,
    index: usize,
    answer: Result<Option<SettleError>, Box<dyn Any + Send>>,
) {
    let shard = pool.shards.get(index);
    match answer {
        Ok(None) => {}
        Ok(Some(SettleError::Stale(_))) => shard.stale_settle(),
        Ok(Some(_e)) => {
            #[cfg(feature = "tracing")]
            tracing::warn!(error = %_e, "leaseq: the store failed a settle");
            shard.failed_settle();
        }
        Err(_) => Counters::bump(&pool.counters.worker_panics),
    }
}

/// Settles `delivery` as `settle` says, for worker `index`, when the pool has no completer
/// (the store answers at once): made where the delivery lies, now, and counted here.
///
/// Synchronous: the store's settle is polled once, as its future is ready at its first
/// poll ([`Store::settles_at_once`]). No future of the pool's own wraps it (three layers
/// of `async fn` and a `catch_unwind` cost a pool item about 110 instructions). A panic in
/// it (an item's `Drop`, as the ack drops the queue's copy) unwinds to the worker's own
/// `catch_unwind` around the item's handling, which counts it in `worker_panics` as
/// [`count`] would: the settle is the handling's last step, and the delivery is left
/// settled.
pub(crate) fn settle_here<T: Send + Sync + 'static, R: Runtime, S: Store<T, Runtime = R>>(
    pool: &PoolShared<T>,
    index: usize,
    delivery: &mut Delivery<T, R, S>,
    settle: Settle,
    #[cfg(feature = "tracing")] span: tracing::Span,
) {
    // Settling (and what it reports) belongs to the delivery's span too.
    #[cfg(feature = "tracing")]
    let _entered = span.enter();
    match settle_at_once(delivery, settle) {
        // Done: nothing to count (`count` stays out of line).
        Some(None) => {}
        Some(refused) => count(pool, index, Ok(refused)),
        None => {
            // A store that said it settles at once did not: its settle was dropped unfinished,
            // with the outcome the store gives a dropped settle (the lease runs out, for most).
            #[cfg(feature = "tracing")]
            tracing::warn!("leaseq: a store that settles at once left a settle pending");
            pool.shards.get(index).failed_settle();
        }
    }
}

/// Makes `settle` on `delivery` with one poll of the store's future: its answer, or `None`
/// if that future was not ready.
#[inline]
fn settle_at_once<T: Send + 'static, R: Runtime, S: Store<T, Runtime = R>>(
    delivery: &mut Delivery<T, R, S>,
    settle: Settle,
) -> Option<Option<SettleError>> {
    let ticket = match delivery.take_ticket() {
        Ok(ticket) => ticket,
        Err(e) => return Some(Some(e.into())),
    };
    let store = delivery.store();
    match settle {
        Settle::Ack => store.ack(ticket).now_or_never().map(Result::err),
        Settle::DeadLetter(message) => store
            .dead_letter(ticket, message)
            .now_or_never()
            .map(Result::err),
        Settle::Nack(failure) => store.nack(ticket, failure).now_or_never().map(Result::err),
        Settle::Snooze(delay) if store.snoozes() => {
            store.snooze(ticket, delay).now_or_never().map(Result::err)
        }
        Settle::Snooze(delay) => store
            .nack(ticket, snoozed(delay))
            .now_or_never()
            .map(Result::err),
    }
}

/// A snooze on a store without snooze: a counted retry after its delay.
fn snoozed(delay: Duration) -> Failure {
    Failure::error("snoozed").retry_after(delay)
}

/// Settles `delivery` as `settle` says, for worker `index`, through the pool's `completer`:
/// the settle is made before this returns; its answer is counted here if the store gives it
/// at once, else by the completer when it comes (the worker does not wait for it). The
/// delivery is left settled where it lies (the worker's `Held`).
pub(crate) fn settle_through<T: Send + Sync + 'static, R: Runtime, S: Store<T, Runtime = R>>(
    pool: &Arc<PoolShared<T>>,
    completer: &Completer,
    index: usize,
    delivery: &mut Delivery<T, R, S>,
    settle: Settle,
    #[cfg(feature = "tracing")] span: tracing::Span,
) {
    let settle = self::settle(delivery.store().clone(), delivery.take_ticket(), settle);
    #[cfg(feature = "tracing")]
    let settle = tracing::Instrument::instrument(settle, span);
    let counted = {
        let pool = pool.clone();
        AssertUnwindSafe(settle)
            .catch_unwind()
            .map(move |answer| count(&pool, index, answer))
    };
    let mut counted: BoxFuture = Box::pin(counted);
    // Polled once here, so the store has the settle before the worker moves on: a waker
    // that does nothing, as the completer's task polls it from now on.
    let waker = futures::task::noop_waker();
    if counted
        .as_mut()
        .poll(&mut Context::from_waker(&waker))
        .is_pending()
    {
        completer.submit(counted);
    }
}
