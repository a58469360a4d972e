//! The in-memory store: the `no_std` core behind one lock, with the wake-ups around it.
//!
//! Every operation is one short critical section on a `parking_lot` mutex (never held
//! across an await; of the caller's code, only a receive's copy of the item, its `Clone`,
//! runs under it: see `MemoryStore::lock`); its results are ready at once, so the
//! [`Store`](crate::Store) futures it returns complete on their first poll.

mod cancel;
mod drive;
mod flow;
mod graph;
mod graph_ops;
mod graph_trait;
mod handles;
mod heartbeat;
mod history;
mod inbox;
mod lend;
mod lock;
mod operator;
mod progress;
mod push;
mod rate;
mod recorded;
mod schedules;
mod settle;
mod settle_batch;
mod spare;
mod store;
mod take;
mod wait;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use event_listener::Event;
use leaseq_core::{Queue, Receipt, Timestamp};
use parking_lot::Mutex;

use crate::beats::{BeatKey, Heartbeats};
use crate::lease_lost::{LeaseSignal, Timing};
use crate::runtime::Runtime;
use crate::signal::Signal;

pub(crate) use history::KindOf;
use inbox::Inbox;
pub(crate) use lock::Locked;
pub use schedules::Withdrawn;
pub use wait::MemoryWaiting;
use wait::Wait;

/// A queue's items in memory: [`leaseq_core::Queue`] behind one lock. The default store of
/// [`LeaseQueue`](crate::LeaseQueue); build one with [`LeaseQueue::new`](crate::LeaseQueue::new)
/// or [`LeaseQueue::builder`](crate::LeaseQueue::builder).
pub struct MemoryStore<T, R> {
    pub(crate) rt: R,
    /// The runtime's clock and sleeps as a trait object, for lease-lost futures.
    pub(crate) timing: Arc<dyn Timing>,
    state: Mutex<State<T>>,
    /// Plain pushes of an unbounded queue, waiting for the next holder of the state lock to
    /// move them into the core (see [`Inbox`]).
    inbox: Inbox<T>,
    /// Notified when items may have become receivable, or the queue closed.
    available: Signal,
    /// Notified when items left the queue (room for a push), or it closed.
    space: Signal,
    /// Notified when the driver must re-arm (an earlier deadline or beat, events to drain,
    /// the last handle gone).
    driver_wake: Event,
    /// Notified when the queue may have become empty (nothing ready, delayed or in flight).
    emptied: Signal,
    closed: AtomicBool,
    /// Some item has had a checkpoint: until then a handler's `progress()` takes no lock.
    pub(crate) has_progress: AtomicBool,
    /// Live handles (`LeaseQueue` clones and streams; deliveries do not count).
    handles: AtomicUsize,
    visibility: Duration,
    /// The core config's max lease (every queue built here has one).
    max_lease: Option<Duration>,
    heartbeat_every: Duration,
    /// Whether the driver drains the core's events into `tracing` (rather than leaving them
    /// for `LeaseQueue::poll_event`).
    traces_events: bool,
    /// Whether a lock's release looks at the core's events or noted dead letters at all:
    /// `traces_events`, or a record of finished jobs kept (one flag, so that a queue with
    /// neither tests one bool there, as before the record existed).
    /// (Atomic only because the graph turns it on when first used: read `Relaxed`, the
    /// same load as a plain `bool`.)
    watches_core: AtomicBool,
    /// The queue's name, for its traces and metrics.
    name: &'static str,
    /// Its metric handles and what it last published.
    #[cfg(feature = "metrics")]
    metrics: crate::metrics::QueueMetrics,
    /// A batch ack's emptied vector of deliveries, kept for the next batch receive's (see
    /// `spare.rs`).
    spare: spare::Spare,
    /// The record of finished jobs, when kept (see `history.rs`).
    history: Option<Box<history::History<T>>>,
    /// Held by every operation on dead letters, around the lock, while letters may be lent
    /// out of the core to be copied outside the lock (see `lend.rs`).
    dead_gate: parking_lot::ReentrantMutex<()>,
}

#[cfg(feature = "metrics")]
impl<T, R> Drop for MemoryStore<T, R> {
    /// Publishes what changed since the last publication, then takes the queue's share off
    /// the gauges.
    fn drop(&mut self) {
        let st = self.state.get_mut();
        let now = st.core.now();
        let last = st.publish.take(&st.core, now, true);
        self.metrics.retire(last);
    }
}

impl<T, R> std::fmt::Debug for MemoryStore<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("closed", &self.closed.load(Ordering::Relaxed))
            .field("handles", &self.handles.load(Ordering::Relaxed))
            .field("visibility", &self.visibility)
            .finish_non_exhaustive()
    }
}

/// Everything behind the lock.
pub(crate) struct State<T> {
    pub(crate) core: Queue<T>,
    /// When the driver will next wake by itself; `Timestamp::MAX` when it sleeps until
    /// woken.
    pub(crate) alarm: Timestamp,
    pub(crate) beats: Heartbeats,
    /// Live items when the lock was last released.
    pub(crate) live_at_release: u64,
    /// Whether the queue has flow control (a limit set, a push with flow keys: see
    /// `flow.rs`), and its items in flight when the lock was last released then.
    pub(crate) flow: bool,
    pub(crate) in_flight_at_release: u64,
    /// The core's `rate_wakes` when the lock was last released (see `rate.rs`).
    pub(crate) rate_wakes_at_release: u64,
    /// Handlers' checkpoints, beside the core (see `progress.rs`).
    pub(crate) progress: progress::ProgressMap,
    /// The inbox's last batch, kept for its allocation.
    pub(crate) spare: Vec<T>,
    /// The schedules kept in this queue, by name (see `schedules.rs`).
    pub(crate) schedules: schedules::Schedules,
    /// Jobs that wait for other jobs (see `graph.rs`).
    pub(crate) graph: graph::GraphState<T>,
    /// `Stats::events_dropped` when the driver last looked, to report drops as they grow.
    #[cfg(feature = "tracing")]
    pub(crate) events_dropped_seen: u64,
    /// When the metrics are published next.
    #[cfg(feature = "metrics")]
    pub(crate) publish: crate::metrics::PublishState,
}

/// A lease held from a [`MemoryStore`]: the core's receipt, and the heartbeat registration
/// if the lease has one.
#[derive(Debug)]
pub struct MemoryTicket {
    pub(crate) receipt: Receipt,
    pub(crate) beat: Option<(BeatKey, Arc<LeaseSignal>)>,
}

impl<T, R: Runtime> MemoryStore<T, R> {
    pub(crate) fn new(
        rt: R,
        core: Queue<T>,
        heartbeat_every: Duration,
        traces_events: bool,
        name: &'static str,
    ) -> Self {
        let visibility = core.config().visibility();
        let max_lease = core.config().max_lease();
        // A bounded queue pushes under the state lock, where its capacity is exact; an
        // unbounded one through the inbox, which never refuses.
        let inbox = Inbox::new(core.next_id(), core.config().capacity().is_none());
        MemoryStore {
            inbox,
            timing: Arc::new(rt.clone()),
            rt,
            state: Mutex::new(State {
                core,
                alarm: Timestamp::MAX,
                beats: Heartbeats::default(),
                live_at_release: 0,
                flow: false,
                in_flight_at_release: 0,
                rate_wakes_at_release: 0,
                progress: progress::ProgressMap::default(),
                spare: Vec::new(),
                schedules: schedules::Schedules::new(),
                graph: graph::GraphState::new(),
                #[cfg(feature = "tracing")]
                events_dropped_seen: 0,
                #[cfg(feature = "metrics")]
                publish: crate::metrics::PublishState::default(),
            }),
            available: Signal::default(),
            space: Signal::default(),
            driver_wake: Event::new(),
            emptied: Signal::default(),
            closed: AtomicBool::new(false),
            has_progress: AtomicBool::new(false),
            handles: AtomicUsize::new(1),
            visibility,
            max_lease,
            heartbeat_every,
            traces_events,
            watches_core: AtomicBool::new(traces_events),
            name,
            #[cfg(feature = "metrics")]
            metrics: crate::metrics::QueueMetrics::new(name),
            spare: spare::Spare::default(),
            history: None,
            dead_gate: parking_lot::ReentrantMutex::new(()),
        }
    }

    /// Keeps a record of finished jobs for `window` after each finish, their kinds read
    /// with `kind_of` (see `history.rs`).
    pub(crate) fn with_history(
        mut self,
        window: Duration,
        kind_of: Option<history::KindOf<T>>,
    ) -> Self {
        let now = self.rt.now();
        self.state.get_mut().core.note_dead_letters();
        self.watches_core.store(true, Ordering::Relaxed);
        self.history = Some(Box::new(history::History::new(window, kind_of, now)));
        self
    }

    /// A store around `core` for another store to build on (a durable store keeps one
    /// and journals what it does): no driver is spawned (the outer store's
    /// [`drive`](crate::Store::drive) calls this one's), and the core's events are left
    /// for [`poll_event`](Self::poll_event). `heartbeat_every` is clamped to
    /// (0, visibility].
    pub fn from_core(rt: R, core: Queue<T>, heartbeat_every: Duration, name: &'static str) -> Self {
        let every = heartbeat_every.clamp(Duration::from_nanos(1), core.config().visibility());
        Self::new(rt, core, every, false, name)
    }

    /// The oldest core event not yet taken (the kinds the core's config records).
    pub fn poll_event(&self) -> Option<leaseq_core::Event> {
        self.lock().core.poll_event()
    }

    /// Runs `f` on the core under the queue's lock, the time applied first. The lock's
    /// guard wakes receivers and the driver as for any operation. Crate-private: `f` must
    /// not drop a delivery or call back into this store (see `operator.rs`).
    pub(crate) fn with_core<U>(&self, f: impl FnOnce(&mut Queue<T>, Timestamp) -> U) -> U {
        let now = self.rt.now();
        let mut st = self.lock_recorded();
        st.core.handle_timeout(now);
        if st.core.has_noted_dead() {
            self.record_dead(&mut st);
        }
        f(&mut st.core, now)
    }

    /// The one lock. No item's `Drop` runs under it: an item leaves the core by value (an
    /// ack takes the queue's copy out with `ack_take`, a taken dead letter hands it over,
    /// a purge drops what it removed after the lock), and no caller's closure runs under
    /// it. No dead letter is copied under it: the reads (`dead_letters`,
    /// `dead_letter_page`, `take_events`) and a kind filter lend the letters out of the
    /// core and copy them, or read their kinds, after the lock (`lend.rs`).
    ///
    /// The item's `Clone` runs under it in one place: a receive, where the core copies
    /// the item for its holder and keeps the original for a redelivery
    /// (`Queue::receive`, `Queue::receive_many_as`). An item whose `Clone` calls into its
    /// own queue (or drops a delivery of it) deadlocks that receive: a known limit
    /// (RELIABILITY.md), kept because each way out measured costs every item more than
    /// the 2 % the hot path may grow by: a copy after the lock by a second lock trip
    /// (+70 instructions an item of the 748 of `benches/instructions.sh path`), items kept
    /// in an `Arc` and copied from it after the lock (+170: an allocation at the push, its
    /// free at the ack, two atomic counts; and a new `T: Sync` bound), or a tag on each
    /// item saying whether it is shared (+33; leaseq-core's example `item_copy_cost`
    /// measures both); a live item lent out for the copy, as a
    /// dead letter is, would leave the core without it while its lease can run out. With
    /// the record of finished jobs by kind, a new dead letter's `ItemKind` is read under
    /// it too (`record_dead`). A `parking_lot` mutex: it spins briefly before
    /// parking, which suits a lock held for tens of nanoseconds and taken a few times per
    /// item from several threads, and it has no poisoning (the core's operations do not
    /// call back, so a panic elsewhere cannot leave it half-changed).
    ///
    /// The guard re-arms the driver when it is released (see [`Locked`]), so no operation
    /// can schedule a deadline or a beat the driver does not know about.
    ///
    /// Whoever takes it first moves the inbox's pushes into the core, so every operation
    /// sees every push that returned before it.
    #[inline]
    pub(crate) fn lock(&self) -> Locked<'_, T, R> {
        let mut guard = self.state.lock();
        if self.inbox.pending() {
            self.inbox.drain_into(&mut guard);
        }
        Locked::new(guard, self)
    }

    /// The lock, for an operator's read or removal of dead letters: the dead letters not
    /// yet in the record of finished jobs are recorded first (the driver records them
    /// otherwise, at its next step), so that none leaves before its entry is written.
    pub(crate) fn lock_recorded(&self) -> Locked<'_, T, R> {
        let mut st = self.lock();
        if st.core.has_noted_dead() {
            self.record_dead(&mut st);
        }
        st
    }

    #[inline]
    pub(crate) fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}
