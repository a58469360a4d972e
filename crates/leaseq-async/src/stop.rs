//! A stop request that tasks check on their hot path (one atomic load) and wait on, and
//! [`Stopping`], the same request as handlers and a [`Consumer`](crate::Consumer)'s callers
//! see it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
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
        let this = &mut *self;
        this.stop.poll_asked(&mut this.listener, cx)
    }
}

impl Stop {
    /// Ready once a stop is asked; else pending, `listener` registered to be woken then.
    fn poll_asked(&self, listener: &mut Option<EventListener>, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            if self.is_asked() {
                return Poll::Ready(());
            }
            // Listening before the check above is repeated: a stop asked in between wakes
            // the listener.
            match listener.as_mut() {
                None => *listener = Some(self.event.listen()),
                Some(l) => {
                    if Pin::new(l).poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    *listener = None;
                }
            }
        }
    }
}

/// Completes once the pool (or the [`Consumer`](crate::Consumer)) it came from begins to
/// stop: from [`Job::stopping`](crate::Job::stopping) and
/// [`Consumer::stopping`](crate::Consumer::stopping).
///
/// Cheap to make (a reference count), `Unpin`, `Send`, `Sync` and `'static`: select it
/// beside a handler's work, keep it across awaits, clone it for other tasks.
/// [`is_stopping`](Self::is_stopping) asks without waiting. Once complete it stays
/// complete: polled again, it is ready at once.
#[must_use = "futures do nothing unless polled"]
pub struct Stopping {
    stop: Arc<Stop>,
    listener: Option<EventListener>,
}

impl Stopping {
    pub(crate) fn new(stop: Arc<Stop>) -> Self {
        Stopping {
            stop,
            listener: None,
        }
    }

    /// Whether the stop has begun (this future would complete at its next poll).
    pub fn is_stopping(&self) -> bool {
        self.stop.is_asked()
    }
}

impl Future for Stopping {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        this.stop.poll_asked(&mut this.listener, cx)
    }
}

impl Clone for Stopping {
    /// Another future on the same stop (not yet listening).
    fn clone(&self) -> Self {
        Stopping::new(self.stop.clone())
    }
}

impl std::fmt::Debug for Stopping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stopping")
            .field("stopping", &self.is_stopping())
            .finish()
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
