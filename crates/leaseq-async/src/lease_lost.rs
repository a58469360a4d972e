//! The lease-lost signal of a delivery kept alive by a heartbeat, and the future that waits
//! for it (public, so that other stores make them for their own leases).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use event_listener::{Event, EventListener};
use leaseq_core::Timestamp;
use parking_lot::Mutex;

use crate::runtime::Runtime;

/// The lost flag of a lease kept alive by a store's heartbeat; a store marks it lost when an
/// extension is refused or the max lease is reached.
///
/// Shared (`Arc`) between the store's heartbeat, which [marks](Self::mark_lost) it, and the
/// [`LeaseLost`] futures made [from it](LeaseLost::from_signal), which complete then. Once
/// lost, it stays lost.
#[derive(Debug, Default)]
pub struct LeaseSignal {
    lost: AtomicBool,
    event: Event,
}

impl LeaseSignal {
    /// A signal not lost yet, to share between a heartbeat and its lease's holders.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Marks the lease lost and wakes every [`LeaseLost`] waiting on this signal. Marking
    /// it again does nothing more.
    pub fn mark_lost(&self) {
        self.lost.store(true, Ordering::Release);
        self.event.notify(usize::MAX);
    }

    /// Whether the lease was marked lost.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    /// Makes a signal nobody else holds as good as new, for reuse: not lost. Its event is
    /// kept: with no [`LeaseLost`] alive (the `&mut` proves it), nobody listens to it.
    pub(crate) fn reset(&mut self) {
        *self.lost.get_mut() = false;
    }
}

/// A runtime's clock and sleeps behind a trait object: made once per queue, so that a
/// [`LeaseLost`] or a [`Job`](crate::Job) can read the time and sleep without being generic
/// over the runtime (and without a sleep built for every delivery: it is built on first
/// poll).
pub(crate) trait Timing: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
    fn sleep_until(&self, at: Timestamp) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

impl<R: Runtime> Timing for R {
    fn now(&self) -> Timestamp {
        Runtime::now(self)
    }
    fn sleep_until(&self, at: Timestamp) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(Runtime::sleep_until(self, at))
    }
}

/// Completes when the lease of a delivery is lost (see
/// [`Delivery::lease_lost`](crate::Delivery::lease_lost)). Never completes while the lease
/// is kept alive. `Send` and `Sync`; [`is_lost`](Self::is_lost) asks without waiting.
#[must_use = "futures do nothing unless polled"]
pub struct LeaseLost {
    how: How,
    listener: Option<EventListener>,
}

enum How {
    /// Kept alive by the heartbeat: lost when the signal says so.
    Heartbeat(Arc<LeaseSignal>),
    /// Lost at the deadline; the sleep is made on first poll.
    Deadline {
        at: Timestamp,
        timing: Arc<dyn Timing>,
        sleep: Mutex<Option<Pin<Box<dyn Future<Output = ()> + Send>>>>,
    },
}

impl LeaseLost {
    /// Already lost: completes on its first poll (for a settled or released lease).
    pub fn lost() -> Self {
        let signal = LeaseSignal::new();
        signal.mark_lost();
        Self::from_signal(signal)
    }

    /// Lost when `signal` is [marked lost](LeaseSignal::mark_lost): for a lease kept alive
    /// by a store's heartbeat.
    pub fn from_signal(signal: Arc<LeaseSignal>) -> Self {
        LeaseLost {
            how: How::Heartbeat(signal),
            listener: None,
        }
    }

    /// Lost at `at` on `runtime`'s clock: for a lease without a heartbeat, lost at its
    /// deadline. The sleep is made on first poll.
    pub fn at_deadline<R: Runtime>(runtime: &R, at: Timestamp) -> Self {
        Self::deadline_on(at, Arc::new(runtime.clone()))
    }

    /// [`at_deadline`](Self::at_deadline) with a queue's shared clock.
    pub(crate) fn deadline_on(at: Timestamp, timing: Arc<dyn Timing>) -> Self {
        LeaseLost {
            how: How::Deadline {
                at,
                timing,
                sleep: Mutex::new(None),
            },
            listener: None,
        }
    }

    /// Whether the lease is lost already (the heartbeat refused or capped; or, without
    /// one, the deadline passed).
    pub fn is_lost(&self) -> bool {
        match &self.how {
            How::Heartbeat(signal) => signal.is_lost(),
            How::Deadline { at, timing, .. } => timing.now() >= *at,
        }
    }
}

impl Future for LeaseLost {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let signal = match &this.how {
            How::Deadline { at, timing, sleep } => {
                let mut sleep = sleep.lock();
                let sleep = sleep.get_or_insert_with(|| timing.sleep_until(*at));
                return sleep.as_mut().poll(cx);
            }
            How::Heartbeat(signal) => signal,
        };
        loop {
            if signal.is_lost() {
                return Poll::Ready(());
            }
            match &mut this.listener {
                None => this.listener = Some(signal.event.listen()),
                Some(l) => {
                    if Pin::new(l).poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    this.listener = None;
                }
            }
        }
    }
}

impl std::fmt::Debug for LeaseLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("LeaseLost");
        match &self.how {
            How::Heartbeat(signal) => d.field("heartbeat", &true).field("lost", &signal.is_lost()),
            How::Deadline { at, .. } => d.field("deadline", at),
        };
        d.finish()
    }
}
