//! The queue handle: push, receive, close, stats.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use leaseq_core::{
    Config, ConservationError, DeadLetter, Event, EventMask, ItemView, MessageId, PushOptions,
    Queue, RedriveError, Stats, Timestamp,
};

use crate::driver;
use crate::error::{NewQueueError, PushError};
use crate::runtime::{spawn_guarded, Runtime};
use crate::shared::{Listening, Shared};

/// A lease queue on runtime `R`: clone it freely across tasks and threads.
///
/// Pushing is synchronous (it never waits), so sync code can feed a queue; receiving is a
/// future. A received [`Delivery`](crate::Delivery) must be acked or nacked; dropped, it goes
/// back to the queue at once. Each queue runs one small background task on its runtime, the
/// *driver*: it sleeps on one timer until the next lease deadline, end of a delay or
/// heartbeat, applies it, and sleeps again. It ends when the last handle is dropped and no
/// lease is kept alive.
///
/// ```
/// use std::time::Duration;
/// use leaseq_async::{Config, LeaseQueue, Runtime, SimRuntime};
///
/// let rt = SimRuntime::new(); // virtual time: the 500 ms below pass instantly
/// rt.block_on({
///     let rt = rt.clone();
///     async move {
///         let config = Config::new(Duration::from_millis(500)).with_max_attempts(2);
///         let queue = LeaseQueue::with_runtime(rt.clone(), config).unwrap();
///         let id = queue.push("send invoice 981").unwrap();
///
///         // A worker takes it and hangs: the lease runs out, the item comes back.
///         let stuck = queue.receive().await.unwrap();
///         let again = queue.receive().await.unwrap();
///         assert_eq!((again.id(), again.attempt()), (id, 2));
///         assert_eq!(rt.now(), stuck.deadline());
///
///         // The first worker wakes up: its ack is refused, the second one's accepted.
///         assert!(stuck.ack().is_err());
///         again.ack().unwrap();
///         assert_eq!(queue.stats().late_acks_stale, 1);
///     }
/// });
/// ```
///
/// See the adapter crates (`leaseq-tokio`, `leaseq-smol`) for the same on real runtimes.
pub struct LeaseQueue<T, R: Runtime> {
    pub(crate) shared: Arc<Shared<T, R>>,
}

/// Builds a [`LeaseQueue`] with settings beyond the core [`Config`].
#[derive(Debug)]
pub struct QueueBuilder<R> {
    config: Config,
    heartbeat_every: Option<Duration>,
    runtime: Option<R>,
    events: Option<EventMask>,
}

impl<R: Runtime> QueueBuilder<R> {
    /// How often held leases with a heartbeat are extended (by one visibility each time).
    /// Default: a third of the visibility timeout.
    pub fn heartbeat_every(mut self, every: Duration) -> Self {
        self.heartbeat_every = Some(every);
        self
    }

    /// Which core [`Event`]s the queue records for you to take with
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

    /// The queue, with its reaper and heartbeat tasks spawned.
    pub fn build<T: Send + 'static>(self) -> Result<LeaseQueue<T, R>, NewQueueError> {
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
        let shared = Arc::new(Shared::new(rt.clone(), core, every, traces_events));
        drop(spawn_guarded(&rt, driver::run(Arc::downgrade(&shared))));
        Ok(LeaseQueue { shared })
    }
}

impl<T: Send + 'static, R: Runtime> LeaseQueue<T, R> {
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
        QueueBuilder {
            config,
            heartbeat_every: None,
            runtime: None,
            events: None,
        }
    }
}

impl<T, R: Runtime> LeaseQueue<T, R> {
    /// The runtime this queue runs on.
    pub fn runtime(&self) -> &R {
        &self.shared.rt
    }

    /// The current time on this queue's clock.
    pub fn now(&self) -> Timestamp {
        self.shared.rt.now()
    }

    /// The visibility timeout.
    pub fn visibility(&self) -> Duration {
        self.shared.visibility
    }

    /// Adds an item, visible at once. Never waits: a full or closed queue hands the item
    /// back inside the error.
    pub fn push(&self, item: T) -> Result<MessageId, PushError<T>> {
        self.push_with(item, Duration::ZERO, None)
    }

    /// Adds an item that becomes visible after `delay`.
    pub fn push_delayed(&self, item: T, delay: Duration) -> Result<MessageId, PushError<T>> {
        self.push_with(item, delay, None)
    }

    /// Adds an item, visible after `delay`, that is useless after `ttl` from now: it is then
    /// never delivered again, goes to the dead letters as expired, and no item timeout
    /// outlasts it.
    pub fn push_with(
        &self,
        item: T,
        delay: Duration,
        ttl: Option<Duration>,
    ) -> Result<MessageId, PushError<T>> {
        if self.shared.is_closed() {
            return Err(PushError::Closed(item));
        }
        // A plain push needs no fresh clock reading: it becomes visible "now" whatever the
        // time, so the queue's own latest time serves (one clock read saved per item).
        let timed = !delay.is_zero() || ttl.is_some();
        let clock = timed.then(|| self.shared.rt.now());
        let mut st = self.shared.lock();
        let now = clock.unwrap_or_else(|| st.core.now());
        let mut options = PushOptions::new().delay(delay);
        if let Some(ttl) = ttl {
            options = options.expires_at(now.saturating_add(ttl));
        }
        let pushed = if timed {
            st.core.push_with(item, now, options)
        } else {
            st.core.push(item, now)
        };
        match pushed {
            Ok(id) => {
                // (Releasing the lock re-arms the reaper for a delay or an expiry.)
                drop(st);
                if delay.is_zero() {
                    self.shared.available.notify(1);
                }
                Ok(id)
            }
            Err(e) => {
                drop(st);
                Err(PushError::from_core(e))
            }
        }
    }

    /// Adds every item of `items` under one lock; stops at the first refusal and returns
    /// the ids of those accepted, with the refused item and the rest handed back.
    pub fn push_batch<I>(&self, items: I) -> Result<Vec<MessageId>, (PushError<T>, Vec<T>)>
    where
        I: IntoIterator<Item = T>,
    {
        let mut items = items.into_iter();
        if self.shared.is_closed() {
            return match items.next() {
                Some(first) => Err((PushError::Closed(first), items.collect())),
                None => Ok(Vec::new()),
            };
        }
        let mut ids = Vec::with_capacity(items.size_hint().0);
        let mut st = self.shared.lock();
        let now = st.core.now();
        let mut refused = None;
        for item in items.by_ref() {
            match st.core.push(item, now) {
                Ok(id) => ids.push(id),
                Err(e) => {
                    refused = Some(PushError::from_core(e));
                    break;
                }
            }
        }
        drop(st);
        self.shared.available.notify(ids.len());
        match refused {
            None => Ok(ids),
            // The queue never saw the rest.
            Some(e) => Err((e, items.collect())),
        }
    }

    /// Stops new receives and pushes. Receivers waiting now get `None`; deliveries already
    /// out can still be settled. Items left in the queue stay there (see [`stats`](Self::stats)).
    pub fn close(&self) {
        if !self.shared.closed.swap(true, Ordering::AcqRel) {
            self.shared.available.notify_always(usize::MAX);
            self.shared.driver_wake.notify(usize::MAX);
        }
    }

    /// Completes when nothing is ready, delayed or in flight: every item pushed so far was
    /// acked or dead-lettered. (Dead letters do not count.)
    pub async fn wait_empty(&self) {
        loop {
            let listening = Listening::new(&self.shared.emptied);
            let now = self.shared.rt.now();
            let empty = {
                let mut st = self.shared.lock();
                st.core.handle_timeout(now);
                st.core.is_empty()
            };
            if empty {
                return;
            }
            listening.wait().await;
        }
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.shared.is_closed()
    }

    /// The core's gauges and totals, brought up to date.
    pub fn stats(&self) -> Stats {
        let now = self.shared.rt.now();
        let mut st = self.shared.lock();
        st.core.handle_timeout(now);
        st.core.stats()
    }

    /// Every live item (ready, delayed or in flight) with its attempts and, in flight, its
    /// lease deadline, brought up to date: for admin tools and checks. A snapshot taken
    /// under the lock in one pass over the items.
    pub fn peek(&self) -> Vec<ItemView> {
        let now = self.shared.rt.now();
        let mut st = self.shared.lock();
        st.core.handle_timeout(now);
        st.core.items().collect()
    }

    /// Leases currently kept alive by the heartbeat.
    pub fn heartbeats(&self) -> usize {
        self.shared.lock().beats.len()
    }

    /// The oldest core [`Event`] not yet taken. Only the kinds asked for with
    /// [`QueueBuilder::events`] are recorded (none by default).
    pub fn poll_event(&self) -> Option<Event> {
        self.shared.lock().core.poll_event()
    }

    /// The dead letters, oldest first: a snapshot (the items are shared `Arc`s, not copies).
    pub fn dead_letters(&self) -> Vec<DeadLetter<T>>
    where
        T: Clone,
    {
        self.shared.lock().core.dead_letters().cloned().collect()
    }

    /// Runs `f` over a snapshot of the dead letters, oldest first.
    ///
    /// `f` runs after the queue's lock is released, so it may use the queue freely (settle
    /// or drop a delivery, push, read stats): nothing it does can deadlock.
    pub fn inspect_dead_letters<U>(
        &self,
        f: impl FnOnce(&mut dyn Iterator<Item = &DeadLetter<T>>) -> U,
    ) -> U
    where
        T: Clone,
    {
        let letters = self.dead_letters();
        f(&mut letters.iter())
    }

    /// Removes every dead letter and hands them over.
    pub fn take_dead_letters(&self) -> Vec<DeadLetter<T>> {
        self.shared.lock().core.take_dead_letters()
    }

    /// Puts a dead letter back, visible at once, attempts reset.
    pub fn redrive(&self, id: MessageId) -> Result<MessageId, RedriveError> {
        let now = self.shared.rt.now();
        let r = self.shared.lock().core.redrive(id, now);
        if r.is_ok() {
            self.shared.available.notify(1);
        }
        r
    }

    /// Recounts every item and checks the core's invariants (the conservation law among
    /// them): for tests and health checks. Costs a pass over every item.
    pub fn check_invariants(&self) -> Result<(), ConservationError> {
        self.shared.lock().core.check_invariants()
    }
}

impl<T, R: Runtime> Clone for LeaseQueue<T, R> {
    fn clone(&self) -> Self {
        self.shared.handles.fetch_add(1, Ordering::Relaxed);
        LeaseQueue {
            shared: self.shared.clone(),
        }
    }
}

impl<T, R: Runtime> Drop for LeaseQueue<T, R> {
    fn drop(&mut self) {
        if self.shared.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            // The last handle: let the background tasks see it and end.
            self.shared.driver_wake.notify(usize::MAX);
            self.shared.available.notify_always(usize::MAX);
        }
    }
}

impl<T, R: Runtime> std::fmt::Debug for LeaseQueue<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseQueue")
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}
