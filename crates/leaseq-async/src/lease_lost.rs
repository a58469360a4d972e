//! The lease-lost signal of a delivery kept alive by the heartbeat, and the future that
//! waits for it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use event_listener::{Event, EventListener};
use leaseq_core::Timestamp;
use parking_lot::Mutex;

use crate::runtime::Runtime;

/// Whether a delivery's lease was lost while it was held: a heartbeat extension was refused,
/// or the max lease lifetime was reached.
#[derive(Debug, Default)]
pub(crate) struct LeaseSignal {
    lost: AtomicBool,
    event: Event,
}

impl LeaseSignal {
    pub(crate) fn mark_lost(&self) {
        self.lost.store(true, Ordering::Release);
        self.event.notify(usize::MAX);
    }

    pub(crate) fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
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
    /// Already lost (a settled or released lease).
    pub(crate) fn now() -> Self {
        let signal = Arc::new(LeaseSignal::default());
        signal.mark_lost();
        Self::heartbeat(signal)
    }

    pub(crate) fn heartbeat(signal: Arc<LeaseSignal>) -> Self {
        LeaseLost {
            how: How::Heartbeat(signal),
            listener: None,
        }
    }

    /// Without a heartbeat the lease is lost at its deadline.
    pub(crate) fn at_deadline(at: Timestamp, timing: Arc<dyn Timing>) -> Self {
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
