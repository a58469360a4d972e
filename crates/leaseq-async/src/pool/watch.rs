//! [`PoolWatch`]: a running pool read from elsewhere in its process (a dashboard, a status
//! endpoint) while the service keeps the [`Pool`] itself to shut it down.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::{snapshot, Pool, PoolShared};
use crate::pool_stats::PoolStats;
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;
use crate::store::Store;
use crate::watchdog::{Holding, StuckWorker};

/// An item a worker of a watched pool holds now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Running {
    /// The worker's index in its pool.
    pub worker: usize,
    /// The item, its type and when the worker took it.
    pub holding: Holding,
    /// How long the worker has held it, by the pool's runtime clock.
    pub running_for: Duration,
    /// Whether the watchdog reported the worker stuck on this item.
    pub stuck: bool,
}

/// A read-only handle on a running [`Pool`] ([`Pool::watch`]): its stats, the items its
/// workers hold and for how long, the watchdog's reports. Cheap to clone; it reads the
/// pool's shared counters and never stops or slows a worker (the workers' progress is the
/// watchdog's, which a look reads as the watchdog does). It holds a handle on the pool's
/// queue, as the pool does.
///
/// ```
/// use std::time::Duration;
/// use leaseq_async::{LeaseQueue, Pool, SimRuntime, Watchdog};
///
/// let rt = SimRuntime::new();
/// rt.block_on({
///     let rt = rt.clone();
///     async move {
///         let queue: LeaseQueue<u32, _> =
///             LeaseQueue::with_runtime(rt, leaseq_core::Config::new(Duration::from_secs(30))).unwrap();
///         let pool = Pool::builder(queue.clone())
///             .workers(2)
///             .watchdog(Watchdog::default())
///             .spawn(|_job| async { Ok(()) });
///         let watch = pool.watch();
///         assert_eq!(watch.workers(), 2);
///         queue.push(1).await.unwrap();
///         queue.wait_empty().await;
///         assert_eq!(watch.stats().ok, 1);
///         pool.shutdown(Duration::from_secs(1)).await;
///     }
/// });
/// ```
pub struct PoolWatch<T, R: Runtime, S: Store<T, Runtime = R>> {
    queue: LeaseQueue<T, R, S>,
    shared: Arc<PoolShared<T>>,
    workers: usize,
}

impl<T: Clone + Send + Sync + 'static, R: Runtime, S: Store<T, Runtime = R>> Pool<T, R, S> {
    /// A read-only handle on this pool, for a dashboard or a status page of the same
    /// process (see [`PoolWatch`]).
    pub fn watch(&self) -> PoolWatch<T, R, S> {
        let workers = self
            .tasks
            .lock()
            .map_or_else(|e| e.into_inner().len(), |t| t.len());
        PoolWatch {
            queue: self.queue.clone(),
            shared: Arc::clone(&self.shared),
            workers,
        }
    }
}

impl<T: Clone + Send + Sync + 'static, R: Runtime, S: Store<T, Runtime = R>> PoolWatch<T, R, S> {
    /// The queue the pool works on.
    pub fn queue(&self) -> &LeaseQueue<T, R, S> {
        &self.queue
    }

    /// The workers the pool was started with.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Worker tasks running now ([`Pool::live_workers`]): 0 once the pool has shut down.
    pub fn live_workers(&self) -> usize {
        self.shared.live_workers.load(Ordering::Acquire)
    }

    /// Whether the pool has a watchdog: without one, no worker's item is known
    /// ([`running`](Self::running) is empty).
    pub fn watched(&self) -> bool {
        !self.shared.board.workers.is_empty()
    }

    /// The pool's snapshot ([`Pool::stats`]): outcomes, per-type latencies and the timeout
    /// the advisor suggests, the queue's stats.
    pub fn stats(&self) -> PoolStats {
        snapshot(&self.queue, &self.shared)
    }

    /// The items the workers hold now, by worker, with how long each has been held and
    /// whether the watchdog reported it; empty for a pool without a watchdog.
    pub fn running(&self) -> Vec<Running> {
        let now = self.queue.runtime().now();
        let reports = self.stuck_workers();
        let board = &self.shared.board;
        board
            .workers
            .iter()
            .enumerate()
            .filter_map(|(worker, p)| {
                let (_, holding) = p.holding()?;
                Some(Running {
                    worker,
                    holding,
                    running_for: now.saturating_duration_since(holding.since),
                    stuck: reports
                        .iter()
                        .any(|r| r.worker == worker && r.holding == holding),
                })
            })
            .collect()
    }

    /// The watchdog's reports so far ([`Pool::stuck_workers`]).
    pub fn stuck_workers(&self) -> Vec<StuckWorker> {
        self.shared.board.reports.lock().clone()
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> Clone for PoolWatch<T, R, S> {
    fn clone(&self) -> Self {
        PoolWatch {
            queue: self.queue.clone(),
            shared: Arc::clone(&self.shared),
            workers: self.workers,
        }
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> std::fmt::Debug for PoolWatch<T, R, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolWatch")
            .field("workers", &self.workers)
            .finish_non_exhaustive()
    }
}
