//! Tests on virtual time: a test run on a fresh `SimRuntime`, a queue on it, sleeps and
//! limits on its clock.

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use futures::future::{select, Either};
use leaseq_async::{Config, LeaseQueue, Runtime, SimRuntime};

/// Runs `test` to its end on a fresh `SimRuntime` (given to it), virtual time jumping
/// whenever every task waits; returns its output.
pub fn run<F: Future>(test: impl FnOnce(SimRuntime) -> F) -> F::Output {
    let rt = SimRuntime::new();
    rt.block_on(test(rt.clone()))
}

/// A queue on the memory store with `config`, on `rt` (panics if the config is refused).
pub fn queue<T: Clone + Send + 'static>(
    rt: &SimRuntime,
    config: Config,
) -> LeaseQueue<T, SimRuntime> {
    LeaseQueue::with_runtime(rt.clone(), config).expect("a valid config")
}

/// A queue named `name` on the memory store with `config`, on `rt` (panics if refused).
pub fn named_queue<T: Clone + Send + 'static>(
    rt: &SimRuntime,
    name: &'static str,
    config: Config,
) -> LeaseQueue<T, SimRuntime> {
    LeaseQueue::<T, SimRuntime>::builder(config)
        .runtime(rt.clone())
        .name(name)
        .build()
        .expect("a valid config")
}

/// Sleeps `d` of virtual time.
pub async fn sleep(rt: &SimRuntime, d: Duration) {
    rt.sleep_until(rt.now().saturating_add(d)).await;
}

/// `fut`'s output, or `None` if `limit` of virtual time passes first.
pub async fn within<F: Future>(rt: &SimRuntime, limit: Duration, fut: F) -> Option<F::Output> {
    let sleep = pin!(rt.sleep_until(rt.now().saturating_add(limit)));
    match select(pin!(fut), sleep).await {
        Either::Left((out, _)) => Some(out),
        Either::Right(_) => None,
    }
}

/// A pool of `workers` on `q` whose handler holds each item for `hold` of virtual time, and
/// the most items `counted` picks that it ran at once (a concurrency limit's check).
pub fn pool_with_peak<T: Clone + Send + Sync + 'static>(
    rt: &SimRuntime,
    q: &LeaseQueue<T, SimRuntime>,
    workers: usize,
    hold: Duration,
    counted: fn(&T) -> bool,
) -> (
    leaseq_async::Pool<T, SimRuntime>,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;
    let (now, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let pool = leaseq_async::Pool::builder(q.clone())
        .workers(workers)
        .spawn({
            let (now, peak, rt) = (now, peak.clone(), rt.clone());
            move |job: leaseq_async::Job<T>| {
                let (now, peak, rt) = (now.clone(), peak.clone(), rt.clone());
                async move {
                    let limited = counted(&job.item);
                    if limited {
                        peak.fetch_max(now.fetch_add(1, SeqCst) + 1, SeqCst);
                    }
                    sleep(&rt, hold).await;
                    if limited {
                        now.fetch_sub(1, SeqCst);
                    }
                    Ok(())
                }
            }
        });
    (pool, peak)
}
