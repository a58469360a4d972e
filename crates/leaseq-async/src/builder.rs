//! Building a queue on a [`MemoryStore`]: `LeaseQueue::new`, `with_runtime` and the builder.

use std::sync::Arc;
use std::time::Duration;

use leaseq_core::{Config, EventMask, Queue};

use crate::error::NewQueueError;
use crate::memory::MemoryStore;
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;

/// A lease's total lifetime, extends and heartbeats included, when the config sets none:
/// 60 minutes, as Pub/Sub's default maximum lease. Past it the heartbeat stops extending, the
/// holder is told the lease is lost, and the item comes back. `Config::with_max_lease` sets
/// another (`Duration::MAX` for none).
pub const DEFAULT_MAX_LEASE: Duration = Duration::from_secs(3600);

/// A queue's name unless [`QueueBuilder::name`] sets another.
pub(crate) const DEFAULT_NAME: &str = "leaseq";

/// Builds a [`LeaseQueue`] with settings beyond the core [`Config`]. A config without a
/// max lease lifetime gets [`DEFAULT_MAX_LEASE`].
#[derive(Debug)]
pub struct QueueBuilder<R> {
    config: Config,
    heartbeat_every: Option<Duration>,
    runtime: Option<R>,
    events: Option<EventMask>,
    name: &'static str,
}

impl<R: Runtime> QueueBuilder<R> {
    pub(crate) fn new(config: Config) -> Self {
        QueueBuilder {
            config,
            heartbeat_every: None,
            runtime: None,
            events: None,
            name: DEFAULT_NAME,
        }
    }

    /// The queue's name, for telling queues apart in what it reports: the `queue` field of
    /// its `tracing` events and delivery spans (feature `tracing`) and the `queue` label of
    /// its metrics (feature `metrics`). Default: `"leaseq"`.
    pub fn name(mut self, name: &'static str) -> Self {
        self.name = name;
        self
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

    /// The runtime to run on; by default the one this thread is in ([`Runtime::current`]).
    pub fn runtime(mut self, runtime: R) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// The queue, with its driver task spawned.
    pub fn build<T: Clone + Send + 'static>(self) -> Result<LeaseQueue<T, R>, NewQueueError> {
        let rt = match self.runtime {
            Some(rt) => rt,
            None => R::current().ok_or(NewQueueError::NoRuntime)?,
        };
        let traces_events = cfg!(feature = "tracing") && self.events.is_none();
        let events = match self.events {
            Some(events) => events,
            None if traces_events => EventMask::DEFAULT,
            None => EventMask::NONE,
        };
        let mut config = self.config.with_events(events);
        if config.max_lease().is_none() {
            // A heartbeat must never keep a lease forever (a hung handler would hold its
            // item for good): the safe default lifetime of a lease, extends included.
            let lifetime = DEFAULT_MAX_LEASE.max(config.visibility());
            config = config.with_max_lease(lifetime);
        }
        let core = Queue::new(config).map_err(NewQueueError::Config)?;
        let visibility = core.config().visibility();
        let every = self
            .heartbeat_every
            .unwrap_or(visibility / 3)
            .clamp(Duration::from_nanos(1), visibility);
        let store = Arc::new(MemoryStore::new(rt, core, every, traces_events, self.name));
        Ok(LeaseQueue::start(store))
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

    /// A builder for the settings beyond `config`.
    pub fn builder(config: Config) -> QueueBuilder<R> {
        QueueBuilder::new(config)
    }
}
