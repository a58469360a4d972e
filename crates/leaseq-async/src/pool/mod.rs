//! Worker pools: N workers, each item inside its own timeout, outcomes counted.

mod beat_on_wait;
mod blocking;
mod builder;
mod catch_drop;
mod checkpoint;
mod completer;
mod cut_off;
mod handler;
mod job;
mod kinds;
mod local;
mod report;
mod settle;
mod shards;
mod shutdown;
pub(crate) mod stats;
mod timeout;
mod watch;
mod worker;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use leaseq_core::{Histogram, MessageId};

use crate::fetcher::Fetcher;
use crate::memory::MemoryStore;
use crate::pool_stats::PoolStats;
use crate::queue::LeaseQueue;
use crate::runtime::{spawn_guarded, Runtime};
use crate::stop::Stop;
use crate::store::Store;
use crate::watchdog::{Board, StuckWorker};

pub use builder::PoolBuilder;
pub use job::Job;
pub use report::PoolReport;
pub use timeout::ItemTimeout;
pub use watch::{PoolWatch, Running};

use completer::Completer;
#[cfg(feature = "router")]
pub(crate) use handler::{Handler, HandlerResult};
use shards::Shards;
use stats::Counters;

/// A pool's fetcher and its task.
type FetcherTask<T, R, S> = (Arc<Fetcher<T, R, S>>, <R as Runtime>::Task);

type TypeOf<T> = Arc<dyn Fn(&T) -> &'static str + Send + Sync>;

/// What the workers of one pool share.
pub(crate) struct PoolShared<T> {
    pub(crate) heartbeat: bool,
    /// Asked at shutdown or drop: workers take no new item, and handlers see it
    /// ([`Job::stopping`]).
    pub(crate) stop: Arc<Stop>,
    /// Set once the grace is over (at once by a drop), before any worker is aborted: an item
    /// still held goes back uncounted (`cut_off.rs`).
    pub(crate) cut: AtomicBool,
    /// The items put back so.
    pub(crate) put_back: Mutex<Vec<MessageId>>,
    /// Counts of the rarer events (the outcomes are counted in the shards).
    pub(crate) counters: Arc<Counters>,
    /// Each worker's outcomes and handling times.
    pub(crate) shards: Shards,
    pub(crate) board: Arc<Board>,
    pub(crate) type_of: TypeOf<T>,
    pub(crate) timeout: ItemTimeout<T>,
    /// Retry rules per job kind, if the pool was given them.
    pub(crate) kinds: Option<kinds::Kinds<T>>,
    /// Worker tasks running now.
    pub(crate) live_workers: AtomicUsize,
    /// Where workers hand over settles the store does not answer at once (none for a
    /// store that does: the memory store).
    pub(crate) completer: Option<Arc<Completer>>,
}

/// A running worker pool over one queue.
///
/// ```
/// use std::time::Duration;
/// use leaseq_async::{ItemTimeout, LeaseQueue, Pool, SimRuntime};
/// use leaseq_core::Config;
///
/// let rt = SimRuntime::new();
/// rt.block_on({
///     let rt = rt.clone();
///     async move {
///         let queue = LeaseQueue::with_runtime(rt, Config::new(Duration::from_secs(1))).unwrap();
///         for n in 0..10u32 {
///             queue.push(n).await.unwrap();
///         }
///         let pool = Pool::builder(queue.clone())
///             .workers(3)
///             .item_timeout(ItemTimeout::Fixed(Duration::from_millis(200)))
///             .spawn(|job| async move {
///                 if job.item == 7 {
///                     return Err(leaseq_async::JobError::permanent("seven is bad input"));
///                 }
///                 Ok(())
///             });
///         queue.wait_empty().await;
///         let report = pool.shutdown(Duration::from_secs(1)).await;
///         assert_eq!(report.stats.ok, 9);
///         assert_eq!(report.stats.permanent, 1);
///         assert_eq!(report.stats.queue.dead, 1);
///     }
/// });
/// ```
pub struct Pool<T, R: Runtime, S: Store<T, Runtime = R> = MemoryStore<T, R>> {
    queue: LeaseQueue<T, R, S>,
    shared: Arc<PoolShared<T>>,
    /// Spawns worker `index` again, with the pool's handler (after `abort_worker`).
    respawn: Respawn<T, R, S>,
    tasks: Mutex<Vec<Option<R::Task>>>,
    watchdog: Option<R::Task>,
    watchdog_done: Arc<AtomicBool>,
    /// The fetcher, if the pool leases ahead for its workers, and its task.
    fetcher: Option<FetcherTask<T, R, S>>,
}

impl<T: Clone + Send + Sync + 'static, R: Runtime, S: Store<T, Runtime = R>> Pool<T, R, S> {
    /// A builder for a pool over `queue`.
    pub fn builder(queue: LeaseQueue<T, R, S>) -> PoolBuilder<T, R, S> {
        PoolBuilder::new(queue)
    }

    /// The queue the pool works on.
    pub fn queue(&self) -> &LeaseQueue<T, R, S> {
        &self.queue
    }

    /// A snapshot of outcomes, per-type latencies and the queue's stats.
    pub fn stats(&self) -> PoolStats {
        snapshot(&self.queue, &self.shared)
    }

    /// The latency histogram of each item type's finished runs, in name order.
    pub fn histograms(&self) -> Vec<(&'static str, Histogram)> {
        let advisor = self.shared.shards.merged().records.advisor;
        advisor
            .reports()
            .filter_map(|(k, _)| advisor.histogram(k).map(|h| (k.0, h.clone())))
            .collect()
    }

    /// Worker tasks running now: the number asked for, from start until
    /// [`shutdown`](Self::shutdown). A worker survives panics in and around its handler (see
    /// [`PoolStats::worker_panics`]), and an aborted one is replaced.
    pub fn live_workers(&self) -> usize {
        self.shared.live_workers.load(Ordering::Acquire)
    }

    /// Stuck-worker reports so far.
    pub fn stuck_workers(&self) -> Vec<StuckWorker> {
        self.shared.board.reports.lock().clone()
    }

    /// Stops worker `index` at its next await point, as a crash would: the item it held goes
    /// back to the queue (reason "dropped"). A fresh worker takes its place, as a supervisor
    /// would restart a crashed one, so the pool keeps its worker count; the other workers go
    /// on. For fault drills.
    pub fn abort_worker(&self, index: usize) {
        let rt = self.queue.runtime();
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot @ Some(_)) = tasks.get_mut(index) {
            if let Some(task) = slot.as_mut() {
                rt.abort(task);
            }
            if !self.shared.stop.is_asked() {
                *slot = Some((self.respawn)(
                    &self.queue,
                    &self.shared,
                    self.fetcher.as_ref().map(|(f, _)| f),
                    index,
                ));
            }
        }
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> std::fmt::Debug for Pool<T, R, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("workers", &self.shared.live_workers.load(Ordering::Relaxed))
            .field("heartbeat", &self.shared.heartbeat)
            .field("watchdog", &self.watchdog.is_some())
            .field("stopping", &self.shared.stop.is_asked())
            .finish_non_exhaustive()
    }
}

/// Spawns a worker of a pool with the pool's handler: the handler's type erased here, once
/// per pool, rather than per item.
type Respawn<T, R, S> = Box<
    dyn Fn(
            &LeaseQueue<T, R, S>,
            &Arc<PoolShared<T>>,
            Option<&Arc<Fetcher<T, R, S>>>,
            usize,
        ) -> <R as Runtime>::Task
        + Send
        + Sync,
>;

/// Spawns worker `index` of a pool.
fn spawn_worker<T, R, S, H>(
    queue: &LeaseQueue<T, R, S>,
    shared: &Arc<PoolShared<T>>,
    handler: &Arc<H>,
    fetcher: Option<&Arc<Fetcher<T, R, S>>>,
    index: usize,
) -> R::Task
where
    T: Clone + Send + Sync + 'static,
    R: Runtime,
    S: Store<T, Runtime = R>,
    H: handler::Handle<T>,
{
    let alive = worker::Alive::new(shared.clone());
    let fut = worker::run(
        index,
        queue.clone(),
        alive,
        handler.clone(),
        fetcher.cloned(),
    );
    spawn_guarded(queue.runtime(), fut)
}

fn snapshot<T: Clone + Send + Sync + 'static, R: Runtime, S: Store<T, Runtime = R>>(
    queue: &LeaseQueue<T, R, S>,
    shared: &PoolShared<T>,
) -> PoolStats {
    let c = &shared.counters;
    let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let merged = shared.shards.merged();
    let types: Vec<_> = merged
        .records
        .advisor
        .reports()
        .map(|(k, r)| (k.0, r))
        .collect();
    // Every handling is recorded once, under its outcome, in its worker's shard: the
    // outcome counts are the sums over the types (a permanent error is a `Failed` there).
    let sum = |f: fn(&leaseq_core::TypeReport) -> u64| types.iter().map(|(_, r)| f(r)).sum();
    let failed: u64 = sum(|r| r.failed);
    PoolStats {
        ok: sum(|r| r.ok),
        failed: failed.saturating_sub(merged.records.permanent),
        timed_out: sum(|r| r.timed_out),
        panicked: sum(|r| r.panicked),
        permanent: merged.records.permanent,
        stale_settles: merged.stale_settles,
        failed_settles: merged.failed_settles,
        blocking_overruns: get(&c.blocking_overruns),
        blocking_overruns_running: get(&c.blocking_overruns_running),
        worker_panics: get(&c.worker_panics),
        heartbeat: shared.heartbeat,
        stuck_reports: shared.board.stuck_reports.load(Ordering::Relaxed),
        types,
        queue: queue.stats(),
    }
}
