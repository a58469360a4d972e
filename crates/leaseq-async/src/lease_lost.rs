//! The lease-lost signal of a delivery kept alive by the heartbeat, and the future that
//! waits for it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use event_listener::{Event, EventListener};

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

pin_project_lite::pin_project! {
    /// Completes when the lease of a delivery is lost (see
    /// [`Delivery::lease_lost`](crate::Delivery::lease_lost)). Never completes while the
    /// lease is kept alive.
    #[must_use = "futures do nothing unless polled"]
    pub struct LeaseLost {
        signal: Option<Arc<LeaseSignal>>,
        deadline: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
        listener: Option<EventListener>,
    }
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
            signal: Some(signal),
            deadline: None,
            listener: None,
        }
    }

    /// Without a heartbeat the lease is lost at its deadline.
    pub(crate) fn at_deadline(sleep: Pin<Box<dyn Future<Output = ()> + Send>>) -> Self {
        LeaseLost {
            signal: None,
            deadline: Some(sleep),
            listener: None,
        }
    }
}

impl Future for LeaseLost {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        if let Some(sleep) = this.deadline {
            return sleep.as_mut().poll(cx);
        }
        let Some(signal) = this.signal else {
            return Poll::Pending;
        };
        loop {
            if signal.is_lost() {
                return Poll::Ready(());
            }
            match this.listener {
                None => *this.listener = Some(signal.event.listen()),
                Some(l) => {
                    if Pin::new(l).poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    *this.listener = None;
                }
            }
        }
    }
}
