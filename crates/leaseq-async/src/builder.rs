//! Building a queue on a [`MemoryStore`]: `LeaseQueue::new`, `with_runtime` and the builder.

use std::sync::Arc;
use std::time::Duration;

use leaseq_core::{Config, EventMask, Queue};

use crate::error::NewQueueError;
use crate::memory::MemoryStore;
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;

/// Builds a [`LeaseQueue`] with settings beyond the core [`Config`].
#[derive(Debug)]
pub struct QueueBuilder<R> {
    config: Config,
    heartbeat_every: Option<Duration>,
    runtime: Option<R>,
    events: Option<EventMask>,
}

impl<R: Runtime> QueueBuilder<R> {
    pub(crate) fn new(config: Config) -> Self {
        QueueBuilder {
            config,
            heartbeat_every: None,
            runtime: None,
            events: None,
        }
    }

    /// How often held leases with a heartbeat are extended (by one visibility each time).
    /// Default: a third of the visibility timeout.
    pub fn heartbeat_every(mut self, every: Duration) -> Self {
        self.heartbeat_every = Some(every);
        self
    }

    /// Which core [`Event`](leaseq_core::Event)s the queue records for you to take with
    /// [`LeaseQueue::poll_event`] (bounded by the config's event capacity).
    ///
    /// Without it, whatever `config` says: with the `tracing` feature, the queue's driver
    /// records every kind but `Delivered` and drains them into `tracing` events as they
    /// happen; without that feature, none are recorded (a queue nobody polls would only fill
    /// its buffer and count drops).
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
        let config = self.config.with_events(events);
        let core = Queue::new(config).map_err(NewQueueError::Config)?;
        let visibility = core.config().visibility();
        let every = self
            .heartbeat_every
            .unwrap_or(visibility / 3)
            .clamp(Duration::from_nanos(1), visibility);
        let store = Arc::new(MemoryStore::new(rt, core, every, traces_events));
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
