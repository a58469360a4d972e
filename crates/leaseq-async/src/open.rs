//! Opening a queue on any store: [`OpenStore`] (what a store implements), [`QueueSettings`]
//! (what every store is given), [`DEFAULT_MAX_LEASE`] (what every store applies to a config
//! without a max lease) and [`InMemory`] (the in-memory store as one, `memory_queue`).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use leaseq_core::{Config, EventMask, Queue};

use crate::error::NewQueueError;
use crate::memory::{KindOf, MemoryStore};
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;
use crate::store::Store;

/// A lease's total lifetime, extends and heartbeats included, when the config sets none:
/// 60 minutes, as Pub/Sub's default maximum lease. Past it the heartbeat stops extending, the
/// holder is told the lease is lost, and the item comes back. `Config::with_max_lease` sets
/// another (`Duration::MAX` for none).
pub const DEFAULT_MAX_LEASE: Duration = Duration::from_secs(3600);

/// The settings every store opens a queue with, as
/// [`QueueBuilder`](crate::QueueBuilder) gathered them. A store reads what it needs.
#[derive(Debug)]
#[non_exhaustive]
pub struct QueueSettings<R, C> {
    /// The core configuration (visibility, attempts, backoff, capacity, ...).
    pub config: Config,
    /// The queue's name: its identity in a shared store (Postgres), and the `queue` field
    /// and label of its traces and metrics everywhere.
    pub name: &'static str,
    /// The runtime to run on.
    pub runtime: R,
    /// How a durable store turns items into bytes (unused by the memory store).
    pub codec: C,
    /// How often leases with a heartbeat are extended (`None`: a third of the visibility).
    pub heartbeat_every: Option<Duration>,
    /// The core events recorded for the caller to poll (`None`: as the store decides).
    pub events: Option<EventMask>,
    /// The in-memory store's record of finished jobs: how long an entry is kept (`None`:
    /// no record). SQLite and Postgres take theirs in their own options.
    pub retention: Option<Duration>,
    /// How the memory store reads an item's kind for its record: a `KindOf<T>`, erased.
    pub(crate) kind_of: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

impl<R, C> QueueSettings<R, C> {
    /// The heartbeat period: as set, else a third of the visibility; never zero and never
    /// longer than the visibility.
    pub fn heartbeat_period(&self) -> Duration {
        let visibility = self.config.visibility();
        self.heartbeat_every.unwrap_or(visibility / 3).clamp(
            Duration::from_nanos(1),
            visibility.max(Duration::from_nanos(1)),
        )
    }
}

/// A store, ready to open a queue: [`InMemory`] here, `Sqlite` in `leaseq-sqlite`, `Postgres`
/// in `leaseq-postgres`. [`QueueBuilder::open`](crate::QueueBuilder::open) takes any of them,
/// so moving a job from one store to another changes that one argument:
///
/// ```
/// use std::time::Duration;
/// use leaseq_async::{Config, InMemory, LeaseQueue, SimRuntime};
///
/// let rt = SimRuntime::new();
/// rt.block_on({
///     let rt = rt.clone();
///     async move {
///         let queue: LeaseQueue<&str, _> = LeaseQueue::builder(Config::new(Duration::from_secs(30)))
///             .name("thumbnails")
///             .runtime(rt)
///             .open(InMemory)
///             .await
///             .unwrap();
///         queue.push("cat.jpg").await.unwrap();
///     }
/// });
/// ```
pub trait OpenStore<T, R: Runtime, C> {
    /// The store it opens.
    type Store: Store<T, Runtime = R>;
    /// Why it could not open: each store's own, typed; it takes the builder's own errors
    /// (an invalid config, no runtime) too.
    type Error: std::error::Error + From<NewQueueError> + Send + Sync + 'static;

    /// Opens the queue: a store that needs I/O does it here (reads its file, connects).
    fn open(
        self,
        settings: QueueSettings<R, C>,
    ) -> impl Future<Output = Result<LeaseQueue<T, R, Self::Store>, Self::Error>> + Send;
}

/// The in-memory store as an [`OpenStore`]: items live in this process only, gone when it
/// exits. The default of [`LeaseQueue::new`].
#[derive(Clone, Copy, Debug, Default)]
pub struct InMemory;

impl<T: Clone + Send + 'static, R: Runtime, C: Send> OpenStore<T, R, C> for InMemory {
    type Store = MemoryStore<T, R>;
    type Error = NewQueueError;

    fn open(
        self,
        settings: QueueSettings<R, C>,
    ) -> impl Future<Output = Result<LeaseQueue<T, R, MemoryStore<T, R>>, NewQueueError>> + Send
    {
        std::future::ready(memory_queue(settings))
    }
}

/// A queue on a new [`MemoryStore`] with `settings`.
pub(crate) fn memory_queue<T: Clone + Send + 'static, R: Runtime, C>(
    settings: QueueSettings<R, C>,
) -> Result<LeaseQueue<T, R>, NewQueueError> {
    let traces_events = cfg!(feature = "tracing") && settings.events.is_none();
    let events = match settings.events {
        Some(events) => events,
        None if traces_events => EventMask::DEFAULT,
        None => EventMask::NONE,
    };
    let every = settings.heartbeat_period();
    let mut config = settings.config.with_events(events);
    if config.max_lease().is_none() {
        // A heartbeat must never keep a lease forever (a hung handler would hold its item
        // for good): the safe default lifetime of a lease, extends included.
        let lifetime = DEFAULT_MAX_LEASE.max(config.visibility());
        config = config.with_max_lease(lifetime);
    }
    let core = Queue::new(config).map_err(NewQueueError::Config)?;
    let mut store = MemoryStore::new(settings.runtime, core, every, traces_events, settings.name);
    if let Some(window) = settings.retention {
        let kind_of = settings
            .kind_of
            .as_ref()
            .and_then(|k| k.downcast_ref::<KindOf<T>>().copied());
        store = store.with_history(window, kind_of);
    }
    let store = Arc::new(store);
    Ok(LeaseQueue::start(store))
}
