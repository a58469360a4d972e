//! The state every handle, delivery and background task of one queue shares.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use event_listener::{Event, EventListener};
use leaseq_core::{Queue, Timestamp};
use parking_lot::{Mutex, MutexGuard};

use crate::beats::Heartbeats;
use crate::runtime::Runtime;

/// One queue's state: the core behind its one lock, plus the wake-ups around it.
pub(crate) struct Shared<T, R> {
    pub(crate) rt: R,
    state: Mutex<State<T>>,
    /// Notified when items may have become receivable, or the queue closed.
    pub(crate) available: Signal,
    /// Notified when the driver must re-arm (an earlier deadline or beat, events to drain,
    /// the last handle gone).
    pub(crate) driver_wake: Event,
    /// Notified when the queue may have become empty (nothing ready, delayed or in flight).
    pub(crate) emptied: Signal,
    pub(crate) closed: AtomicBool,
    /// Live `LeaseQueue` handles (deliveries do not count).
    pub(crate) handles: AtomicUsize,
    pub(crate) visibility: Duration,
    pub(crate) heartbeat_every: Duration,
    /// Whether the driver drains the core's events into `tracing` (rather than leaving them
    /// for `LeaseQueue::poll_event`).
    pub(crate) traces_events: bool,
}

/// Everything behind the lock.
pub(crate) struct State<T> {
    pub(crate) core: Queue<T>,
    /// When the driver will next wake by itself; `Timestamp::MAX` when it sleeps until
    /// woken.
    pub(crate) alarm: Timestamp,
    pub(crate) beats: Heartbeats,
}

impl<T, R: Runtime> Shared<T, R> {
    pub(crate) fn new(
        rt: R,
        core: Queue<T>,
        heartbeat_every: Duration,
        traces_events: bool,
    ) -> Self {
        let visibility = core.config().visibility();
        Shared {
            rt,
            state: Mutex::new(State {
                core,
                alarm: Timestamp::MAX,
                beats: Heartbeats::default(),
            }),
            available: Signal::default(),
            driver_wake: Event::new(),
            emptied: Signal::default(),
            closed: AtomicBool::new(false),
            handles: AtomicUsize::new(1),
            visibility,
            heartbeat_every,
            traces_events,
        }
    }

    /// The one lock. User code never runs under it: an item leaves the core by value (an
    /// ack takes the queue's copy out with `ack_take`, a taken dead letter hands it over),
    /// so no item's `Drop` runs here.
    /// A `parking_lot` mutex: it spins briefly before parking, which suits a lock held for
    /// tens of nanoseconds and taken three times per item from several threads, and it has
    /// no poisoning (a panic elsewhere cannot leave the core half-changed: its operations
    /// do not call back).
    ///
    /// The guard re-arms the driver when it is released (see [`Locked`]), so no operation
    /// can schedule a deadline or a beat the driver does not know about.
    #[inline]
    pub(crate) fn lock(&self) -> Locked<'_, T, R> {
        Locked {
            guard: self.state.lock(),
            shared: self,
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

/// The queue lock's guard. When it is released it compares the core's
/// [`next_timeout_bound`](Queue::next_timeout_bound) and the next heartbeat with the
/// driver's alarm and wakes the driver if something is now due earlier: an extend or
/// heartbeat that shortened a lease, a delayed push, a nack with backoff, a receive, a new
/// or brought-forward beat. With events traced, it also wakes the driver to drain them.
/// Re-arming lives here, in one place, rather than after each operation that might need it
/// (a missed call there once left a shortened lease to come back only at its old deadline).
pub(crate) struct Locked<'a, T, R> {
    guard: MutexGuard<'a, State<T>>,
    shared: &'a Shared<T, R>,
}

impl<T, R> std::ops::Deref for Locked<'_, T, R> {
    type Target = State<T>;
    #[inline]
    fn deref(&self) -> &State<T> {
        &self.guard
    }
}

impl<T, R> std::ops::DerefMut for Locked<'_, T, R> {
    #[inline]
    fn deref_mut(&mut self) -> &mut State<T> {
        &mut self.guard
    }
}

impl<T, R> Drop for Locked<'_, T, R> {
    #[inline]
    fn drop(&mut self) {
        let st = &mut *self.guard;
        let at = st.core.next_timeout_bound().min(st.beats.next_due());
        if at < st.alarm {
            st.alarm = at;
            self.shared.driver_wake.notify(1);
        } else if self.shared.traces_events && st.core.has_events() {
            self.shared.driver_wake.notify(1);
        }
    }
}

/// An [`Event`] whose hot-path notifications cost one atomic load when nobody listens.
///
/// `event_listener`'s `notify` takes the event's internal lock and issues a `SeqCst` fence
/// even with no listener; pushes, receives and acks notify on every item, nearly always
/// with nobody waiting. So the listeners taken through [`listen`](Self::listen) are counted,
/// and [`notify`](Self::notify) skips the event when the count is zero.
///
/// That is sound for conditions that change and are checked under the queue lock: a waiter
/// counts itself and registers its listener *before* it re-checks the condition under the
/// lock, and a notifier changes the condition under the lock and reads the count *after*.
/// If the waiter's check came after the change, it sees the change; if before, its count
/// and registration happen before the notifier's read (through the lock), so the notifier
/// sees it and wakes it. A condition changed outside the lock (the closed flag, the handle
/// count) is announced with [`notify_always`](Self::notify_always).
#[derive(Debug, Default)]
pub(crate) struct Signal {
    event: Event,
    /// Listeners taken through `listen` and not yet given back with `unlisten`.
    listeners: AtomicUsize,
}

impl Signal {
    /// A listener, counted until [`unlisten`](Self::unlisten). Re-check the condition (under
    /// the queue lock) after this and before waiting.
    pub(crate) fn listen(&self) -> EventListener {
        self.listeners.fetch_add(1, Ordering::SeqCst);
        self.event.listen()
    }

    /// Gives back a listener taken with [`listen`](Self::listen) (notified or not).
    pub(crate) fn unlisten(&self, listener: EventListener) {
        drop(listener);
        self.listeners.fetch_sub(1, Ordering::SeqCst);
    }

    /// Notifies up to `n` listeners, if any listen. Only for a condition changed under the
    /// queue lock, called after the change.
    #[inline]
    pub(crate) fn notify(&self, n: usize) {
        if self.listeners.load(Ordering::SeqCst) != 0 {
            self.event.notify(n);
        }
    }

    /// Notifies up to `n` listeners unconditionally: for conditions changed outside the lock.
    pub(crate) fn notify_always(&self, n: usize) {
        self.event.notify(n);
    }
}

/// A counted listener of a [`Signal`], given back when dropped.
pub(crate) struct Listening<'a> {
    signal: &'a Signal,
    listener: Option<EventListener>,
}

impl<'a> Listening<'a> {
    pub(crate) fn new(signal: &'a Signal) -> Self {
        Listening {
            signal,
            listener: Some(signal.listen()),
        }
    }

    /// Waits for the notification.
    pub(crate) async fn wait(mut self) {
        if let Some(l) = self.listener.as_mut() {
            l.await;
        }
    }
}

impl Drop for Listening<'_> {
    fn drop(&mut self) {
        if let Some(l) = self.listener.take() {
            self.signal.unlisten(l);
        }
    }
}
