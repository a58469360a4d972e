//! One worker: receive, handle inside the item's timeout, settle, record.

use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::{pin, Pin};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::future::{select, Either};
use futures::FutureExt;
use leaseq_core::{Failure, Outcome};

use crate::delivery::Delivery;
use crate::error::JobError;
use crate::pool::job::Job;
use crate::pool::stats::Counters;
use crate::pool::PoolShared;
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;
use crate::watchdog::Holding;

/// What a handler run gives: its result, or the message of a panic caught on the way.
pub(crate) type HandlerResult = Result<Result<(), JobError>, String>;

/// A handler as the workers call it: boxed once, shared by all workers.
pub(crate) type Handler<T> =
    Arc<dyn Fn(Job<T>) -> Pin<Box<dyn Future<Output = HandlerResult> + Send>> + Send + Sync>;

/// The text of a panic payload.
pub(crate) fn panic_message(payload: Box<dyn Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = payload.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".to_string()
    }
}

/// How one handling ended.
enum Ended {
    Done(Result<(), JobError>),
    Panicked(String),
    TimedOut(Duration),
}

/// One worker's life: items one after another until the pool stops.
///
/// Each item's handling runs inside `catch_unwind`, so a panic that escapes it (a handler
/// future or an item whose `Drop` panics, a panicking item-type or timeout function) costs
/// the worker nothing: it is counted in `worker_panics`, any delivery still held goes back
/// to the queue as it unwinds, and the worker takes the next item.
pub(crate) async fn run<T: Clone + Send + Sync + 'static, R: Runtime>(
    index: usize,
    queue: LeaseQueue<T, R>,
    alive: Alive<T>,
    handler: Handler<T>,
) {
    let pool = &alive.0;
    let rt = queue.runtime().clone();
    let progress = &pool.board.workers[index];
    loop {
        progress.idle(rt.now());
        if pool.stopping.load(Ordering::Acquire) {
            return;
        }
        let delivery = {
            let stop = pool.stop_listener();
            let receive = if pool.heartbeat {
                queue.receive_with_heartbeat()
            } else {
                queue.receive()
            };
            match select(receive, stop).await {
                Either::Left((Some(d), _)) => d,
                _ => return,
            }
        };
        let handled = AssertUnwindSafe(handle(&rt, pool, &handler, progress, delivery));
        if handled.catch_unwind().await.is_err() {
            Counters::bump(&pool.counters.worker_panics);
        }
    }
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

/// A handler's future whose drop cannot unwind: a panic in a `Drop` of its locals, when it
/// is cancelled (timed out, or its worker aborted or shut down), is caught and counted.
/// Executors treat a panic while dropping a task's future differently (async-executor, and
/// so smol, aborts the process), so none may escape.
struct CatchDrop {
    fut: Option<Pin<Box<dyn Future<Output = HandlerResult> + Send>>>,
    counters: Arc<Counters>,
}

impl Future for CatchDrop {
    type Output = HandlerResult;
    fn poll(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<HandlerResult> {
        match self.fut.as_mut() {
            Some(fut) => fut.as_mut().poll(cx),
            None => std::task::Poll::Pending,
        }
    }
}

impl Drop for CatchDrop {
    fn drop(&mut self) {
        if let Some(fut) = self.fut.take() {
            drop_counted(fut, &self.counters);
        }
    }
}

/// Drops `value` where a panic in its `Drop` is caught and counted, not unwound into the
/// worker.
fn drop_counted<V>(value: V, counters: &Counters) {
    if catch_unwind(AssertUnwindSafe(move || drop(value))).is_err() {
        Counters::bump(&counters.worker_panics);
    }
}

async fn handle<T: Clone + Send + Sync + 'static, R: Runtime>(
    rt: &R,
    pool: &PoolShared<T>,
    handler: &Handler<T>,
    progress: &crate::watchdog::Progress,
    mut delivery: Delivery<T, R>,
) {
    let start = rt.now();
    let item_type = (pool.type_of)(delivery.item());
    progress.busy(Holding {
        id: delivery.id(),
        item_type,
        since: start,
    });
    let mut limit = pool.limit_for(delivery.item(), item_type);
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
    };

    let ended = match catch_unwind(AssertUnwindSafe(|| handler(job))) {
        Err(payload) => Ended::Panicked(panic_message(payload)),
        Ok(fut) => {
            let fut = AssertUnwindSafe(CatchDrop {
                fut: Some(fut),
                counters: pool.counters.clone(),
            })
            .catch_unwind();
            let result = match limit {
                None => Some(fut.await),
                Some(limit) => {
                    let sleep = pin!(rt.sleep_until(start.saturating_add(limit)));
                    match select(fut, sleep).await {
                        Either::Left((r, _)) => Some(r),
                        // The handler's future is cancelled here (`CatchDrop` catches a
                        // panic in its locals' `Drop`s).
                        Either::Right(_) => None,
                    }
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
    let c = &pool.counters;
    let outcome = match &ended {
        Ended::Done(Ok(())) => Outcome::Ok,
        Ended::Done(Err(_)) => Outcome::Failed,
        Ended::Panicked(_) => Outcome::Panicked,
        Ended::TimedOut(_) => Outcome::TimedOut,
    };
    // Record before settling, like the counters: whoever sees the settle (a `wait_empty`
    // that it completes) then sees this handling in every part of `PoolStats`.
    pool.record(item_type, took, outcome);
    // An ack drops the queue's copy of the item once the queue is consistent; a panic in
    // its `Drop` is caught here (the settle itself went through) and counted.
    let settle = AssertUnwindSafe(|| match ended {
        Ended::Done(Ok(())) => {
            Counters::bump(&c.ok);
            delivery.ack().is_ok()
        }
        Ended::Done(Err(e)) if e.is_permanent() => {
            Counters::bump(&c.permanent);
            delivery.dead_letter(e.message()).is_ok()
        }
        Ended::Done(Err(e)) => {
            Counters::bump(&c.failed);
            delivery.nack(e.message()).is_ok()
        }
        Ended::Panicked(message) => {
            Counters::bump(&c.panicked);
            delivery.nack_with(Failure::error(message)).is_ok()
        }
        Ended::TimedOut(limit) => {
            Counters::bump(&c.timed_out);
            #[cfg(feature = "tracing")]
            tracing::debug!(item_type, limit = ?limit, "leaseq: item timed out");
            let failure = Failure::timed_out().and_error(format!("timed out after {limit:?}"));
            delivery.nack_with(failure).is_ok()
        }
    });
    let settled = catch_unwind(settle).unwrap_or_else(|_| {
        Counters::bump(&c.worker_panics);
        true
    });
    if !settled {
        Counters::bump(&c.stale_settles);
    }
    progress.idle(rt.now());
}
