//! Configuring and starting a pool.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex};

use event_listener::Event;

use leaseq_core::KindPolicy;

use super::completer::Completer;
use super::handler::{AsyncHandler, Handle, Handler};
use super::kinds::{KindOf, Kinds};
use super::shards::Shards;
use super::stats::Counters;
use super::{blocking, spawn_worker, ItemTimeout, Job, Pool, PoolShared, Respawn, TypeOf};
use crate::fetcher::Fetcher;
use crate::job_error::JobError;
use crate::memory::MemoryStore;
use crate::queue::LeaseQueue;
use crate::runtime::{spawn_guarded, Runtime};
use crate::stop::Stop;
use crate::store::Store;
use crate::watchdog::{self, Board, Watchdog};

/// The default prefetch of a pool's fetcher (at least one item per worker).
const DEFAULT_PREFETCH: usize = 32;

/// Configures and starts a [`Pool`]. From [`Pool::builder`].
pub struct PoolBuilder<T, R: Runtime, S: Store<T, Runtime = R> = MemoryStore<T, R>> {
    queue: LeaseQueue<T, R, S>,
    workers: usize,
    /// `None`: the default, decided at start (see `item_timeout`).
    timeout: Option<ItemTimeout<T>>,
    heartbeat: bool,
    watchdog: Option<Watchdog>,
    type_of: TypeOf<T>,
    max_overruns: Option<u64>,
    prefetch: Option<usize>,
    kinds: Option<KindOf<T>>,
}

impl<T: Clone + Send + Sync + 'static, R: Runtime, S: Store<T, Runtime = R>> PoolBuilder<T, R, S> {
    /// Defaults: 4 workers, heartbeat on, an item timeout at the lease's end (see
    /// [`item_timeout`](Self::item_timeout)), the default watchdog, every item of type
    /// `"item"`.
    pub(crate) fn new(queue: LeaseQueue<T, R, S>) -> Self {
        PoolBuilder {
            queue,
            workers: 4,
            timeout: None,
            heartbeat: true,
            watchdog: Some(Watchdog::default()),
            type_of: Arc::new(|_| "item"),
            max_overruns: None,
            prefetch: None,
            kinds: None,
        }
    }

    /// Items leased ahead for the workers, beyond those of the workers waiting now.
    ///
    /// With a fetch-ahead the pool's fetcher task leases, in one step of the store (one
    /// lock, one commit, one claim statement), an item for every worker waiting plus
    /// `n` more, and the workers take them from a shared buffer: a worker that finishes an
    /// item finds the next one leased. A lease waits in the buffer at most half the queue's
    /// visibility (then it goes back, its attempt not counted, as all left do at shutdown).
    ///
    /// The fetcher refills the prefetch once half of it is gone, so that a claim takes
    /// many items at once. While a concurrency limit holds its takes back (a store that
    /// says so, [`Store::limit_binds`](crate::Store::limit_binds): Postgres) it
    /// leases fewer ahead, down to 4, and refills as soon as it is short, so that
    /// processes sharing the limit do not hold its slots with items nobody works on.
    ///
    /// Default: for a store that settles at once (the memory store, where a receive is a
    /// lock away), no fetcher: each worker receives for itself; for the others (SQLite,
    /// Postgres), a fetcher with a prefetch of 32 items or one per worker, whichever is
    /// more. Setting it (zero included: a fetcher that leases only for waiting workers)
    /// turns the fetcher on for any store.
    pub fn prefetch(mut self, n: usize) -> Self {
        self.prefetch = Some(n);
        self
    }

    /// The fetcher's prefetch, if the pool has a fetcher.
    fn fetcher_prefetch(&self) -> Option<usize> {
        match self.prefetch {
            Some(n) => Some(n),
            None if self.queue.store().settles_at_once() => None,
            None => Some(DEFAULT_PREFETCH.max(self.workers)),
        }
    }

    /// How many workers (at least 1). Default 4.
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n.max(1);
        self
    }

    /// The time limit around each item ([`ItemTimeout::None`] for none).
    ///
    /// Default: the end of the item's lease, so that a handler never runs on while its item
    /// is redone elsewhere: with the heartbeat (the default), the store's max lease
    /// (`Config::with_max_lease`; [`DEFAULT_MAX_LEASE`](crate::DEFAULT_MAX_LEASE), 60
    /// minutes, unless the config sets another), past which the heartbeat stops and the item
    /// comes back; without it, the queue's visibility. A job that takes longer is timed out
    /// (its future dropped, the item handed back with reason "timed out"), not run twice at
    /// once. (A blocking handler cannot be stopped: its thread runs on as an overrun.)
    pub fn item_timeout(mut self, timeout: ItemTimeout<T>) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The default item timeout: the end of a lease (see `item_timeout`).
    fn default_timeout(&self) -> ItemTimeout<T> {
        let store = self.queue.store();
        if self.heartbeat {
            ItemTimeout::Fixed(store.max_lease().unwrap_or(crate::DEFAULT_MAX_LEASE))
        } else {
            ItemTimeout::Fixed(store.visibility())
        }
    }

    /// Retry rules per job kind: `f` gives each item its [`KindPolicy`] (max attempts,
    /// backoff, item timeout), chosen when a worker takes the item, before its handler runs.
    ///
    /// - The kind's **item timeout**, if set, replaces the pool's
    ///   ([`item_timeout`](Self::item_timeout)) for the item (its own expiry still cuts it
    ///   short). Keep it within the lease's end (the max lease with the heartbeat, the
    ///   visibility without): past it the item is delivered again while its handler runs.
    /// - Every failure of the handling (an error, a panic, a timeout) is judged by the kind's
    ///   rules: retried after the kind's backoff (the queue's jitter applied), dead-lettered
    ///   once the kind's max attempts are spent (it can only lower the queue's: open the
    ///   queue with the largest any kind needs), retried after exactly the handler's delay
    ///   ([`JobError::retry_after`]), dead-lettered at once for [`JobError::permanent`].
    ///   What a rule leaves unset is the queue's.
    /// - A lease that ends without the pool settling it (the process died, a worker was
    ///   aborted, a shutdown handed the item back) is judged by the queue's rules alone: the
    ///   store decides that without the pool.
    ///
    /// The pool applies a kind's verdict as an exact retry or a dead letter
    /// ([`KindPolicy::resolve`] with the queue's [`RetryPolicy`](leaseq_core::RetryPolicy)
    /// from [`Store::retry_policy`]), so it works on every store. On a store that tells no
    /// retry policy only the kinds' timeouts apply. Without kind rules (the default) the
    /// pool does no work for them per item.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leaseq_async::{JobError, LeaseQueue, Pool, SimRuntime};
    /// use leaseq_core::{Config, KindPolicy};
    ///
    /// let rt = SimRuntime::new();
    /// rt.block_on({
    ///     let rt = rt.clone();
    ///     async move {
    ///         let config = Config::new(Duration::from_secs(60)).with_max_attempts(10);
    ///         let queue = LeaseQueue::with_runtime(rt, config).unwrap();
    ///         queue.push("flaky").await.unwrap();
    ///         let pool = Pool::builder(queue.clone())
    ///             // Items named "flaky" get 2 attempts, the others the queue's 10.
    ///             .kind_policy(|item: &&str| match *item {
    ///                 "flaky" => KindPolicy::new().with_max_attempts(2),
    ///                 _ => KindPolicy::new(),
    ///             })
    ///             .spawn(|_job| async { Err(JobError::retry_after(Duration::ZERO, "no luck")) });
    ///         queue.wait_empty().await;
    ///         let report = pool.shutdown(Duration::from_secs(1)).await;
    ///         assert_eq!((report.stats.failed, report.stats.queue.dead), (2, 1));
    ///     }
    /// });
    /// ```
    pub fn kind_policy(mut self, f: impl Fn(&T) -> KindPolicy + Send + Sync + 'static) -> Self {
        self.kinds = Some(Arc::new(f));
        self
    }

    /// No kind rules (a router whose kinds have none of their own).
    #[cfg_attr(not(feature = "router"), allow(dead_code))]
    pub(crate) fn clear_kind_policy(&mut self) {
        self.kinds = None;
    }

    /// Keep each held item's lease alive with the queue's heartbeat (every third of the
    /// visibility, by default), so that slow but legitimate work is not run twice, up to the
    /// max lease. Default: on. Off, a lease ends at its visibility, and so does the default
    /// item timeout.
    ///
    /// On the in-memory store the heartbeat starts when the handler first waits, beating as
    /// if it had started at the take: an item handled within one poll costs no beat. A
    /// handler that computes without yielding for longer than the beat period before its
    /// first wait gets its first beat only then (it holds its worker's thread that long, and
    /// its item timeout cannot fire either); hand such work to `spawn_blocking`.
    pub fn heartbeat(mut self, on: bool) -> Self {
        self.heartbeat = on;
        self
    }

    /// Report workers that stop making progress. Default: on, with [`Watchdog::default`]
    /// (a look every second, a report after a minute on one item).
    pub fn watchdog(mut self, watchdog: Watchdog) -> Self {
        self.watchdog = Some(watchdog);
        self
    }

    /// No watchdog: workers record no progress (a little less work per item).
    pub fn no_watchdog(mut self) -> Self {
        self.watchdog = None;
        self
    }

    /// Names each item's type, for per-type timeouts, latency histograms and timeout rates.
    /// Default: every item is `"item"`.
    pub fn item_type(mut self, f: impl Fn(&T) -> &'static str + Send + Sync + 'static) -> Self {
        self.type_of = Arc::new(f);
        self
    }

    /// Blocking mode only: how many timed-out blocking handlers may still be running before
    /// workers wait for one to end. Default: the number of workers.
    pub fn max_blocking_overruns(mut self, n: u64) -> Self {
        self.max_overruns = Some(n);
        self
    }

    /// Starts the workers with an async handler.
    pub fn spawn<H, F>(self, handler: H) -> Pool<T, R, S>
    where
        H: Fn(Job<T>) -> F + Send + Sync + 'static,
        F: Future<Output = Result<(), JobError>> + Send + 'static,
    {
        // Its futures unboxed: the workers are generic over the handler.
        self.start_with(AsyncHandler(handler), Arc::new(Counters::default()))
    }

    /// Starts the workers with a blocking handler, run on the runtime's blocking threads.
    /// An item timeout cannot stop such a thread: the item is handed back anyway, the thread
    /// is counted as an overrun while it runs on, and overruns are bounded (see
    /// [`max_blocking_overruns`](Self::max_blocking_overruns)).
    pub fn spawn_blocking<H>(self, handler: H) -> Pool<T, R, S>
    where
        H: Fn(&Job<T>) -> Result<(), JobError> + Send + Sync + 'static,
    {
        let rt = self.queue.runtime().clone();
        let overruns = Arc::new(blocking::Overruns {
            counters: Arc::new(Counters::default()),
            max_running: self.max_overruns.unwrap_or(self.workers as u64).max(1),
            ended: Event::new(),
        });
        let counters = overruns.counters.clone();
        let handler = Arc::new(handler);
        let wrapped: Handler<T> = Arc::new(move |job: Job<T>| {
            Box::pin(blocking::run(
                rt.clone(),
                overruns.clone(),
                handler.clone(),
                job,
            ))
        });
        self.start_with(wrapped, counters)
    }

    /// Starts the workers with a handler boxed already (one box per handling: the
    /// router's).
    #[cfg(feature = "router")]
    pub(crate) fn start(self, handler: Handler<T>) -> Pool<T, R, S> {
        self.start_with(handler, Arc::new(Counters::default()))
    }

    fn start_with<H: Handle<T>>(mut self, handler: H, counters: Arc<Counters>) -> Pool<T, R, S> {
        let handler = Arc::new(handler);
        let timeout = match self.timeout.take() {
            Some(timeout) => timeout,
            None => self.default_timeout(),
        };
        let rt = self.queue.runtime().clone();
        let prefetch = self.fetcher_prefetch();
        let board = Arc::new(Board::new(self.workers, self.watchdog.is_some()));
        let shared = Arc::new(PoolShared {
            heartbeat: self.heartbeat,
            stop: Arc::new(Stop::default()),
            cut: AtomicBool::new(false),
            put_back: Mutex::new(Vec::new()),
            counters,
            shards: Shards::new(self.workers),
            board: board.clone(),
            type_of: self.type_of,
            timeout,
            kinds: self
                .kinds
                .map(|of| Kinds::new(of, self.queue.store().retry_policy())),
            live_workers: AtomicUsize::new(0),
            completer: (!self.queue.store().settles_at_once())
                .then(|| Arc::new(Completer::default())),
        });
        let fetcher = prefetch.map(|prefetch| {
            let fetcher = Arc::new(Fetcher::new(
                prefetch,
                self.queue.visibility(),
                self.heartbeat,
            ));
            let task = spawn_guarded(&rt, fetcher.clone().run(self.queue.clone()));
            (fetcher, task)
        });
        if let Some(completer) = &shared.completer {
            drop(spawn_guarded(&rt, completer.clone().run()));
        }
        let tasks = (0..self.workers)
            .map(|i| {
                let fetcher = fetcher.as_ref().map(|(f, _)| f);
                Some(spawn_worker(&self.queue, &shared, &handler, fetcher, i))
            })
            .collect();
        let watchdog_done = Arc::new(AtomicBool::new(false));
        let watchdog = self.watchdog.map(|config| {
            spawn_guarded(
                &rt,
                watchdog::run(rt.clone(), board, config, watchdog_done.clone()),
            )
        });
        let respawn: Respawn<T, R, S> = Box::new(move |queue, shared, fetcher, index| {
            spawn_worker(queue, shared, &handler, fetcher, index)
        });
        Pool {
            queue: self.queue,
            shared,
            respawn,
            tasks: Mutex::new(tasks),
            watchdog,
            watchdog_done,
            fetcher,
        }
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> std::fmt::Debug for PoolBuilder<T, R, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolBuilder")
            .field("workers", &self.workers)
            .field("timeout", &self.timeout)
            .field("heartbeat", &self.heartbeat)
            .field("watchdog", &self.watchdog)
            .field("max_overruns", &self.max_overruns)
            .field("prefetch", &self.prefetch)
            .field("kind_policy", &self.kinds.is_some())
            .finish_non_exhaustive()
    }
}
