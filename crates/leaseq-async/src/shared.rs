//! The state every handle, delivery and background task of one queue shares.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use event_listener::Event;
use leaseq_core::{Queue, Timestamp};

use crate::heartbeat::Heartbeats;
use crate::runtime::Runtime;

/// One queue's state: the core behind its one lock, plus the wake-ups around it.
pub(crate) struct Shared<T, R> {
    pub(crate) rt: R,
    state: Mutex<State<T>>,
    /// Notified when items may have become receivable, or the queue closed.
    pub(crate) available: Event,
    /// Notified when the reaper must re-arm (an earlier deadline, close, last handle gone).
    pub(crate) reaper_wake: Event,
    /// Notified when the heartbeat task must re-arm.
    pub(crate) heartbeat_wake: Event,
    /// Notified when the queue may have become empty (nothing ready, delayed or in flight).
    pub(crate) emptied: Event,
    pub(crate) closed: AtomicBool,
    /// Live `LeaseQueue` handles (deliveries do not count).
    pub(crate) handles: AtomicUsize,
    pub(crate) visibility: Duration,
    pub(crate) heartbeat_every: Duration,
}

/// Everything behind the lock.
pub(crate) struct State<T> {
    pub(crate) core: Queue<Arc<T>>,
    /// When the reaper will next wake by itself; `Timestamp::MAX` when it sleeps until
    /// notified.
    pub(crate) reaper_at: Timestamp,
    pub(crate) beats: Heartbeats,
}

impl<T, R: Runtime> Shared<T, R> {
    pub(crate) fn new(rt: R, core: Queue<Arc<T>>, heartbeat_every: Duration) -> Self {
        let visibility = core.config().visibility();
        Shared {
            rt,
            state: Mutex::new(State {
                core,
                reaper_at: Timestamp::MAX,
                beats: Heartbeats::default(),
            }),
            available: Event::new(),
            reaper_wake: Event::new(),
            heartbeat_wake: Event::new(),
            emptied: Event::new(),
            closed: AtomicBool::new(false),
            handles: AtomicUsize::new(1),
            visibility,
            heartbeat_every,
        }
    }

    /// The one lock. User code never runs under it: items are `Arc`s whose last reference
    /// is never dropped here... except when a dead letter is taken, which hands it out.
    /// A panic elsewhere cannot leave the core half-changed (its operations do not call
    /// back), so a poisoned lock is simply taken over.
    #[inline]
    pub(crate) fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Wakes the reaper if `at` is earlier than its alarm. Call with the lock held.
    #[inline]
    pub(crate) fn rearm(&self, state: &mut State<T>, at: Timestamp) {
        if at < state.reaper_at {
            state.reaper_at = at;
            self.reaper_wake.notify(1);
        }
    }
}
