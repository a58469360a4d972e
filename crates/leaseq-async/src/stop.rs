//! A stop request that tasks check on their hot path (one atomic load) and wait on.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use event_listener::{Event, EventListener};

/// Asked once, seen by every waiter: a pool's workers, a fetcher's task and receivers.
#[derive(Debug, Default)]
pub(crate) struct Stop {
    asked: AtomicBool,
    event: Event,
}

impl Stop {
    /// Asks to stop and wakes every waiter.
    pub(crate) fn ask(&self) {
        self.asked.store(true, Ordering::Release);
        self.event.notify(usize::MAX);
    }

    /// Whether a stop was asked.
    pub(crate) fn is_asked(&self) -> bool {
        self.asked.load(Ordering::Acquire)
    }

    /// Completes once a stop is asked (`Unpin`: select it beside anything).
    pub(crate) fn wait(&self) -> StopWait<'_> {
        StopWait {
            stop: self,
            listener: None,
        }
    }
}

/// [`Stop::wait`]'s future.
pub(crate) struct StopWait<'a> {
    stop: &'a Stop,
    listener: Option<EventListener>,
}

impl Future for StopWait<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            if self.stop.is_asked() {
                return Poll::Ready(());
            }
            // Listening before the check above is repeated: a stop asked in between wakes
            // the listener.
            match self.listener.as_mut() {
                None => self.listener = Some(self.stop.event.listen()),
                Some(l) => {
                    if Pin::new(l).poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    self.listener = None;
                }
            }
        }
    }
}

impl Stop {
    /// `fut`'s output, or `None` if a stop is asked before it completes: `fut` polled
    /// first, then the stop, as `select(fut, stop.wait())` would, without its `Either` (a
    /// worker's wait for its next item, per item).
    pub(crate) fn unless_asked<F: Future + Unpin>(&self, fut: F) -> UnlessAsked<'_, F> {
        UnlessAsked {
            fut,
            stop: self.wait(),
        }
    }
}

/// [`Stop::unless_asked`]'s future.
pub(crate) struct UnlessAsked<'a, F> {
    fut: F,
    stop: StopWait<'a>,
}

impl<F: Future + Unpin> Future for UnlessAsked<'_, F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let Poll::Ready(out) = Pin::new(&mut this.fut).poll(cx) {
            return Poll::Ready(Some(out));
        }
        Pin::new(&mut this.stop).poll(cx).map(|()| None)
    }
}
