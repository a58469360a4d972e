//! One worker: receive, handle inside the item's timeout, settle, record.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use leaseq_core::{Outcome, Timestamp};

use crate::delivery::Delivery;
use crate::fetcher::Fetcher;
use crate::pool::beat_on_wait::BeatOnWait;
use crate::pool::catch_drop::CatchDrop;
use crate::pool::checkpoint::{JobContext, WorkerContext};
use crate::pool::cut_off::Held;
use crate::pool::handler::Handle;
use crate::pool::job::Job;
use crate::pool::local::Local;
use crate::pool::settle::{settle_here, settle_through, Ended, Settle};
use crate::pool::shards::Shard;
use crate::pool::stats::Counters;
use crate::pool::timeout::within;
use crate::pool::PoolShared;
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;
use crate::store::Store;
use crate::watchdog::{Holding, Progress};

/// The text of a panic payload.
pub(crate) fn panic_message(payload: Box<dyn Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panicked (with a payload that is not a string)".to_string()
    }
}

/// When `delivery`'s lease was taken, if its deadline tells.
///
/// The queue reads the clock for a lease under its lock, in the very poll of `receive` that
/// hands the delivery to the worker, and the worker goes on to [`Worker::handle`] in that
/// same poll: that reading is the moment the worker starts on the item. The lease's deadline
/// is that reading plus the visibility timeout, unless it was capped: by the item's expiry,
/// or by saturating at "never" (the max lease lifetime, validated to be at least the
/// visibility, never caps a first deadline). So, uncapped, `deadline - visibility` is that
/// reading exactly, and the worker need not read the clock again. (The handling's end must be
/// read: that is the one reading per item. The start cannot be the previous item's end, as
/// the wait for this item lies between them.)
fn leased_at<T, R: Runtime, S: Store<T, Runtime = R>>(
    delivery: &Delivery<T, R, S>,
    visibility: Duration,
) -> Option<Timestamp> {
    let deadline = delivery.deadline();
    let capped =
        deadline == Timestamp::MAX || delivery.expires_at().is_some_and(|at| deadline >= at);
    (!capped).then(|| deadline.saturating_sub(visibility))
}

/// One worker's life: items one after another until the pool stops.
///
/// Each item's handling runs inside `catch_unwind`, so a panic that escapes it (a handler
/// future or an item whose `Drop` panics, a panicking item-type or timeout function) costs
/// the worker nothing: it is counted in `worker_panics`, any delivery still held goes back
/// to the queue as it unwinds, and the worker takes the next item.
///
/// Per item the worker takes no lock but its own shard's and, with a watchdog, its own
/// progress slot's (each once, and contended only by readers of stats or the watchdog's look),
/// plus, with a fetcher, the fetch buffer's (once, to pop the item), and reads the clock
/// once (see [`Worker::handle`]; with a fetcher that reading is the pop's).
pub(crate) async fn run<T, R, S, H>(
    index: usize,
    queue: LeaseQueue<T, R, S>,
    alive: Alive<T>,
    handler: Arc<H>,
    fetcher: Option<Arc<Fetcher<T, R, S>>>,
) where
    T: Clone + Send + Sync + 'static,
    R: Runtime,
    S: Store<T, Runtime = R>,
    H: Handle<T>,
{
    let pool = &alive.0;
    let rt = queue.runtime().clone();
    let worker: Worker<'_, T, R, S, H> = Worker {
        rt: &rt,
        pool,
        index,
        handler: &*handler,
        progress: pool.board.workers.get(index),
        shard: pool.shards.get(index),
        context: Arc::new(WorkerContext {
            rt: rt.clone(),
            store: queue.store().clone(),
            stop: pool.stop.clone(),
            items: std::marker::PhantomData,
        }),
        #[cfg(feature = "tracing")]
        queue_name: queue.name(),
        _store: std::marker::PhantomData,
    };
    let mut local = Local::new(queue.visibility(), queue.name());
    loop {
        if let Some(progress) = worker.progress {
            progress.idle();
        }
        if pool.stop.is_asked() {
            return;
        }
        let (delivery, start) = match &fetcher {
            // Taken by the pool's fetcher: the worker starts on it at the reading that
            // found it fresh.
            Some(fetcher) => match fetcher.next(&rt).await {
                Some((d, at)) => (d, Some(at)),
                None => return,
            },
            None => {
                // The heartbeat starts when the handler first waits (see `BeatOnWait`).
                let receive = if pool.heartbeat {
                    queue.receive_beat_on_wait()
                } else {
                    queue.receive()
                };
                match pool.stop.unless_asked(receive).await {
                    Some(Some(d)) => (d, None),
                    _ => return,
                }
            }
        };
        let handled = AssertUnwindSafe(worker.handle(&mut local, delivery, start));
        if handled.catch_unwind().await.is_err() {
            Counters::bump(&pool.counters.worker_panics);
        }
    }
}

/// What a worker's items share.
struct Worker<'a, T, R, S, H> {
    rt: &'a R,
    pool: &'a Arc<PoolShared<T>>,
    /// This worker's index in the pool.
    index: usize,
    handler: &'a H,
    /// This worker's progress slot, if the pool has a watchdog.
    progress: Option<&'a Progress>,
    /// Where this worker records its outcomes.
    shard: &'a Shard,
    /// The clock and the store, for its jobs (see `checkpoint.rs`).
    context: Arc<dyn JobContext>,
    /// The queue's name, for the delivery spans.
    #[cfg(feature = "tracing")]
    queue_name: &'static str,
    _store: std::marker::PhantomData<fn() -> S>,
}

/// Counts a worker as alive from its spawn until its future is dropped (it ended, or was
/// aborted, even before its first poll): moved into the worker's future.
pub(crate) struct Alive<T>(Arc<PoolShared<T>>);

impl<T> Alive<T> {
    pub(crate) fn new(pool: Arc<PoolShared<T>>) -> Self {
        pool.live_workers.fetch_add(1, Ordering::AcqRel);
        Alive(pool)
    }
}

impl<T> Drop for Alive<T> {
    fn drop(&mut self) {
        self.0.live_workers.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<T, R, S, H> Worker<'_, T, R, S, H>
where
    T: Clone + Send + Sync + 'static,
    R: Runtime,
    S: Store<T, Runtime = R>,
    H: Handle<T>,
{
    /// Handles one item: its handler inside its time limit, then records and settles.
    ///
    /// One clock reading per item, taken when the handler is done: the start is the moment
    /// the lease was taken, told by the delivery's deadline (see [`leased_at`]), read from
    /// the clock only when that deadline was capped. The progress slot needs no reading of
    /// its own (going idle is not timed: the watchdog only times holdings).
    async fn handle(
        &self,
        local: &mut Local<R>,
        mut delivery: Delivery<T, R, S>,
        start: Option<Timestamp>,
    ) {
        let (rt, pool) = (self.rt, &**self.pool);
        // Put back uncounted if the worker is cut off before it settles (see `cut_off.rs`).
        let held = Held::new(&mut delivery, pool);
        let delivery = &mut *held.delivery;
        let start = start
            .or_else(|| leased_at(delivery, local.visibility))
            .unwrap_or_else(|| rt.now());
        let item_type = (pool.type_of)(delivery.item());
        if let Some(progress) = self.progress {
            progress.busy(Holding {
                id: delivery.id(),
                item_type,
                since: start,
            });
        }
        let mut limit = local.limit_for(pool, delivery.item(), item_type, start);
        // The item's kind rules, if the pool has them (their timeout wins over the pool's).
        let kind = (pool.kinds.as_ref()).map(|kinds| kinds.choose(delivery.item(), &mut limit));
        if let Some(expiry) = delivery.expires_at() {
            let left = expiry.saturating_duration_since(start);
            limit = Some(limit.map_or(left, |l| l.min(left)));
        }
        // The delivery's copy moves into the job: one copy per delivery, not two.
        let Some(item) = delivery.take_item() else {
            return;
        };
        let job = Job {
            item,
            id: delivery.id(),
            attempt: delivery.attempt(),
            deadline: limit.map_or(delivery.deadline(), |l| start.saturating_add(l)),
            lease_lost: delivery.lease_lost(),
            context: self.context.clone(),
            progress: delivery.stored_progress(),
            lease: delivery.lease_key(),
        };

        // The handler runs inside a span per delivery: its own events carry the item's id,
        // attempt and type.
        #[cfg(feature = "tracing")]
        let span = tracing::info_span!(
            "leaseq.delivery",
            queue = self.queue_name,
            id = %job.id,
            attempt = job.attempt,
            item_type,
        );
        #[cfg(feature = "tracing")]
        let made = {
            let _entered = span.enter();
            catch_unwind(AssertUnwindSafe(|| self.handler.call(job)))
        };
        #[cfg(not(feature = "tracing"))]
        let made = catch_unwind(AssertUnwindSafe(|| self.handler.call(job)));
        let ended = match made {
            Err(payload) => Ended::Panicked(panic_message(payload)),
            Ok(fut) => {
                // (Instrumented, the future's drop runs inside the span too.)
                #[cfg(feature = "tracing")]
                let fut = tracing::Instrument::instrument(fut, span.clone());
                let slot = std::pin::pin!(Some(fut));
                let fut = BeatOnWait {
                    fut: AssertUnwindSafe(CatchDrop {
                        fut: slot,
                        counters: &pool.counters,
                    })
                    .catch_unwind(),
                    delivery: pool.heartbeat.then_some(&mut *delivery),
                    leased_at: start,
                };
                let result = match limit {
                    None => Some(fut.await),
                    Some(limit) => {
                        // One timer per worker, moved for each item rather than made anew.
                        let timer = local.timer_at(rt, start.saturating_add(limit));
                        // On `None` the handler's future is cancelled (`CatchDrop` catches
                        // a panic in its locals' `Drop`s).
                        within(fut, timer).await
                    }
                };
                match result {
                    Some(Ok(Ok(r))) => Ended::Done(r),
                    Some(Ok(Err(message))) => Ended::Panicked(message),
                    Some(Err(payload)) => Ended::Panicked(panic_message(payload)),
                    None => Ended::TimedOut(limit.unwrap_or_default()),
                }
            }
        };

        let took = rt.now().saturating_duration_since(start);
        let recorded = match &ended {
            Ended::Done(Ok(())) => Some((Outcome::Ok, false)),
            // Given back for the stop (`JobError::stopped`): put back uncounted, as if cut
            // off, and not an outcome of the pool's (out of line: see `cut_off.rs`).
            Ended::Done(Err(e)) if e.is_stopped() && pool.stop.is_asked() => {
                return held.stopped();
            }
            // Snoozed (`JobError::snooze`): not an outcome, settled below.
            Ended::Done(Err(e)) if e.snooze_delay().is_some() => None,
            Ended::Done(Err(e)) => Some((Outcome::Failed, e.is_permanent())),
            Ended::Panicked(_) => Some((Outcome::Panicked, false)),
            Ended::TimedOut(_) => Some((Outcome::TimedOut, false)),
        };
        // Record before settling: whoever sees the settle (a `wait_empty` that it completes)
        // then sees this handling in every part of `PoolStats`.
        if let Some((outcome, permanent)) = recorded {
            self.shard.record(item_type, took, outcome, permanent);
            #[cfg(feature = "metrics")]
            local.metrics.record(item_type, took, outcome, permanent);
        }
        let settle = Settle::of(pool, ended, kind.as_ref(), delivery.attempt());
        match &pool.completer {
            None => settle_here(
                pool,
                self.index,
                delivery,
                settle,
                #[cfg(feature = "tracing")]
                span,
            ),
            Some(completer) => settle_through(
                self.pool,
                completer,
                self.index,
                delivery,
                settle,
                #[cfg(feature = "tracing")]
                span,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use leaseq_core::{Config, Timestamp};

    use super::leased_at;
    use crate::{LeaseQueue, Push, SimRuntime};

    fn at(d: Duration) -> Timestamp {
        Timestamp::ZERO.saturating_add(d)
    }

    /// The start of a handling is read off the lease's deadline: it must be the clock when
    /// the lease was taken (not the queue's older notion of the time), and unknown when the
    /// deadline was capped.
    #[test]
    fn the_lease_tells_when_it_was_taken() {
        let rt = SimRuntime::new();
        rt.block_on({
            let rt = rt.clone();
            async move {
                let vis = Duration::from_secs(5);
                let q = LeaseQueue::with_runtime(rt.clone(), Config::new(vis)).unwrap();
                q.try_push(1u32).unwrap();
                q.push_with(2, Push::new().ttl(Duration::from_secs(4)))
                    .await
                    .unwrap();
                rt.advance(Duration::from_secs(3));
                let d = q.receive().await.unwrap();
                assert_eq!(leased_at(&d, vis), Some(at(Duration::from_secs(3))));
                // Expires at 4 s, before 3 s + the visibility: the deadline is capped.
                let capped = q.receive().await.unwrap();
                assert_eq!(capped.deadline(), at(Duration::from_secs(4)));
                assert_eq!(leased_at(&capped, vis), None);

                let q = LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::MAX)).unwrap();
                q.try_push(3u32).unwrap();
                let never = q.receive().await.unwrap();
                assert_eq!(leased_at(&never, Duration::MAX), None);
            }
        });
    }
}
