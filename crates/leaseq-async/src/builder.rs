//! Building a queue: [`QueueBuilder`] for every store, and `LeaseQueue::new` /
//! `with_runtime`, the in-memory shortcuts.

use std::any::Any;
use std::borrow::Cow;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use leaseq_core::{Config, EventMask};

use crate::dead_filter::ItemKind;
use crate::error::NewQueueError;
use crate::memory::KindOf;
use crate::open::{memory_queue, OpenStore, QueueSettings};
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;
use crate::store::DEFAULT_NAME;

/// Builds a [`LeaseQueue`] on any store: the settings every store shares (the core
/// [`Config`], a name, the runtime, the codec, the heartbeat period, events), then
/// [`open`](Self::open) with the store ([`InMemory`](crate::InMemory), `leaseq_sqlite::Sqlite`,
/// `leaseq_postgres::Postgres`), or [`build`](Self::build) for the in-memory store without
/// awaiting. A config without a max lease lifetime gets [`DEFAULT_MAX_LEASE`](crate::DEFAULT_MAX_LEASE).
pub struct QueueBuilder<T, R, C = NoCodec> {
    config: Config,
    heartbeat_every: Option<Duration>,
    runtime: Option<R>,
    events: Option<EventMask>,
    name: Cow<'static, str>,
    codec: C,
    retention: Option<Duration>,
    kind_of: Option<Arc<dyn Any + Send + Sync>>,
    _items: PhantomData<fn() -> T>,
}

impl<T, R, C> std::fmt::Debug for QueueBuilder<T, R, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueBuilder")
            .field("config", &self.config)
            .field("name", &self.name)
            .field("heartbeat_every", &self.heartbeat_every)
            .field("events", &self.events)
            .field("runtime_given", &self.runtime.is_some())
            .finish_non_exhaustive()
    }
}

/// The codec of a [`QueueBuilder`] that was given none: enough for the in-memory store,
/// which keeps items by value. A durable store needs a real one
/// ([`QueueBuilder::codec`]: `PostcardCodec` for `serde` items, `BytesCodec` for bytes).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoCodec;

impl<T, R: Runtime> QueueBuilder<T, R> {
    pub(crate) fn new(config: Config) -> Self {
        QueueBuilder {
            config,
            heartbeat_every: None,
            runtime: None,
            events: None,
            name: Cow::Borrowed(DEFAULT_NAME),
            codec: NoCodec,
            retention: None,
            kind_of: None,
            _items: PhantomData,
        }
    }
}

impl<T, R: Runtime, C> QueueBuilder<T, R, C> {
    /// The queue's name: which queue it is in a store that holds several (Postgres), and in
    /// every store the `queue` field of its `tracing` events and delivery spans (feature
    /// `tracing`) and the `queue` label of its metrics (feature `metrics`). Default:
    /// `"leaseq"`. A name built at run time (a `String`) is kept for the life of the
    /// process (leaked once per open: queues are opened once, not per item).
    pub fn name(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.name = name.into();
        self
    }

    /// How a durable store turns items into bytes and back: `PostcardCodec` for any `serde`
    /// item (feature `serde`), `BytesCodec` for `Vec<u8>`, or your own [`Codec`](crate::Codec).
    /// The in-memory store ignores it.
    pub fn codec<C2>(self, codec: C2) -> QueueBuilder<T, R, C2> {
        QueueBuilder {
            config: self.config,
            heartbeat_every: self.heartbeat_every,
            runtime: self.runtime,
            events: self.events,
            name: self.name,
            codec,
            retention: self.retention,
            kind_of: self.kind_of,
            _items: PhantomData,
        }
    }

    /// How often held leases with a heartbeat are extended (by one visibility each time).
    /// Default: a third of the visibility timeout.
    pub fn heartbeat_every(mut self, every: Duration) -> Self {
        self.heartbeat_every = Some(every);
        self
    }

    /// Which core [`Event`](leaseq_core::Event)s the queue records for you to take with
    /// [`LeaseQueue::poll_event`] (bounded by the config's event capacity). The kinds
    /// recorded are decided here, never by the config's own event mask.
    ///
    /// Without it: with the `tracing` feature, the queue records every kind but `Delivered`
    /// and its driver drains them into `tracing` events as they happen (the queue's lock
    /// wakes the driver whenever events wait); without that feature, none are recorded (a
    /// queue nobody polls would only fill its buffer and count drops).
    ///
    /// With it, the events are yours: the driver does not trace them, but with the
    /// `tracing` feature it still warns when [`Stats::events_dropped`](leaseq_core::Stats::events_dropped)
    /// grew (you polled too slowly).
    pub fn events(mut self, events: EventMask) -> Self {
        self.events = Some(events);
        self
    }

    /// The in-memory store keeps a record of finished jobs (acked, dead-lettered,
    /// cancelled, expired) for `window` after each finish, read with
    /// [`LeaseQueue::history`]; its driver removes each entry once its window has passed.
    /// Entries name no kind (see [`retention_by_kind`](Self::retention_by_kind)).
    ///
    /// Off by default: the record holds every finish of the window in memory, a cost a
    /// queue that does not look should not pay (and it is lost with the process). SQLite
    /// and Postgres take theirs in their own options (`Options::retention`); they ignore
    /// this one.
    pub fn retention(mut self, window: Duration) -> Self {
        self.retention = Some(window);
        self.kind_of = None;
        self
    }

    /// [`retention`](Self::retention) with each entry's job kind read by the item's
    /// [`ItemKind`] (the router's envelope), so that the record can be read by kind.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leaseq_async::{Config, HistoryQuery, ItemKind, LeaseQueue, SimRuntime};
    ///
    /// #[derive(Clone)]
    /// struct Job(&'static str);
    /// impl ItemKind for Job {
    ///     fn item_kind(&self) -> Option<&str> { Some(self.0) }
    /// }
    ///
    /// let rt = SimRuntime::new();
    /// rt.block_on({
    ///     let rt = rt.clone();
    ///     async move {
    ///         let q = LeaseQueue::<Job, _>::builder(Config::new(Duration::from_secs(30)))
    ///             .runtime(rt)
    ///             .retention_by_kind(Duration::from_secs(3600))
    ///             .build()
    ///             .unwrap();
    ///         q.push(Job("email")).await.unwrap();
    ///         q.receive().await.unwrap().ack().await.unwrap();
    ///         let record = q.history(HistoryQuery::first(10).kind("email")).await.unwrap();
    ///         assert_eq!(record.len(), 1);
    ///     }
    /// });
    /// ```
    pub fn retention_by_kind(mut self, window: Duration) -> Self
    where
        T: ItemKind + 'static,
    {
        let kind_of: KindOf<T> = T::item_kind;
        self.retention = Some(window);
        self.kind_of = Some(Arc::new(kind_of));
        self
    }

    /// The runtime to run on; by default the one this thread is in ([`Runtime::current`]).
    pub fn runtime(mut self, runtime: R) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// Opens the queue on `store` ([`InMemory`](crate::InMemory), `leaseq_sqlite::Sqlite`,
    /// `leaseq_postgres::Postgres`), with its driver task spawned. A store that needs I/O
    /// does it here; its error says what failed, typed.
    pub async fn open<O: OpenStore<T, R, C>>(
        self,
        store: O,
    ) -> Result<LeaseQueue<T, R, O::Store>, O::Error> {
        store.open(self.settings()?).await
    }

    /// The settings a store opens with: the runtime found if none was given.
    fn settings(self) -> Result<QueueSettings<R, C>, NewQueueError> {
        let runtime = match self.runtime {
            Some(rt) => rt,
            None => R::current().ok_or(NewQueueError::NoRuntime)?,
        };
        let name: &'static str = match self.name {
            Cow::Borrowed(name) => name,
            Cow::Owned(name) => Box::leak(name.into_boxed_str()),
        };
        Ok(QueueSettings {
            config: self.config,
            name,
            runtime,
            codec: self.codec,
            heartbeat_every: self.heartbeat_every,
            events: self.events,
            retention: self.retention,
            kind_of: self.kind_of,
        })
    }

    /// The queue on the in-memory store, with its driver task spawned: [`open`](Self::open)
    /// with [`InMemory`](crate::InMemory), without awaiting.
    pub fn build(self) -> Result<LeaseQueue<T, R>, NewQueueError>
    where
        T: Clone + Send + 'static,
    {
        memory_queue(self.settings()?)
    }
}

impl<T: Clone + Send + 'static, R: Runtime> LeaseQueue<T, R> {
    /// A queue on the runtime this thread is in.
    pub fn new(config: Config) -> Result<Self, NewQueueError> {
        Self::builder(config).build()
    }

    /// A queue on `runtime`.
    pub fn with_runtime(runtime: R, config: Config) -> Result<Self, NewQueueError> {
        Self::builder(config).runtime(runtime).build()
    }

    /// A builder for a queue on any store (see [`QueueBuilder::open`]).
    pub fn builder(config: Config) -> QueueBuilder<T, R> {
        QueueBuilder::new(config)
    }
}
