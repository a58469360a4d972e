//! Settles that finish in the background: a delivery acked (nacked, dead-lettered) without
//! waiting for the store's commit, as a broker client acks.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::channel::oneshot;
use futures::future::BoxFuture;

use crate::runtime::Runtime;
use crate::store_error::{SettleError, StoreError};

/// A settle under way: returned at once by [`Delivery::ack_nowait`](crate::Delivery::ack_nowait)
/// and its siblings, it completes in the background whether or not anyone waits for it.
///
/// The settle has been made when this is returned (the lease is given up: a dropped
/// `Settling` does not hand the item back, and the queue counts the outcome in its stats as
/// for an awaited settle); what remains is the store's answer: whether the receipt was
/// still good, and, for a durable store, that the change is committed. Await it (it is a
/// future) or look with [`try_result`](Self::try_result) to learn the answer; drop it when
/// the answer does not matter, as most consumers do (a settle that is refused leaves the
/// item to come back, as an unacked one would).
#[must_use = "a Settling can be dropped, but then nobody learns whether the settle went through"]
pub struct Settling<O> {
    state: State<O>,
}

enum State<O> {
    /// The answer, until it is taken.
    Done(Option<Result<O, SettleError>>),
    /// The background task's answer, when it comes.
    Running(oneshot::Receiver<Result<O, SettleError>>),
}

impl<O> Settling<O> {
    /// A settle that was answered at once.
    pub(crate) fn done(result: Result<O, SettleError>) -> Self {
        Settling {
            state: State::Done(Some(result)),
        }
    }

    /// Whether the store has answered (the answer not yet taken).
    pub fn is_done(&mut self) -> bool {
        match &mut self.state {
            State::Done(r) => r.is_some(),
            State::Running(rx) => match rx.try_recv() {
                Ok(Some(r)) => {
                    self.state = State::Done(Some(r));
                    true
                }
                Ok(None) => false,
                Err(_) => {
                    self.state = State::Done(Some(Err(ended())));
                    true
                }
            },
        }
    }

    /// The store's answer if it has come, taken out (a second call, or awaiting this after
    /// it, answers "outcome unknown"); `None` while it is still under way.
    pub fn try_result(&mut self) -> Option<Result<O, SettleError>> {
        if !self.is_done() {
            return None;
        }
        match &mut self.state {
            State::Done(r) => Some(r.take().unwrap_or_else(|| Err(taken()))),
            State::Running(_) => None,
        }
    }
}

impl<O> Future for Settling<O> {
    type Output = Result<O, SettleError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match &mut this.state {
            State::Done(r) => Poll::Ready(r.take().unwrap_or_else(|| Err(taken()))),
            State::Running(rx) => match Pin::new(rx).poll(cx) {
                Poll::Ready(r) => {
                    this.state = State::Done(None);
                    Poll::Ready(r.unwrap_or_else(|_| Err(ended())))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl<O> std::fmt::Debug for Settling<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            State::Done(Some(_)) => "answered",
            State::Done(None) => "answer taken",
            State::Running(_) => "under way",
        };
        f.debug_struct("Settling").field("state", &state).finish()
    }
}

// `Settling` holds no pinned state: the receiver is polled through `Pin::new`.
impl<O> Unpin for Settling<O> {}

/// The answer of a settle whose task ended without one (the runtime shut down under it).
fn ended() -> SettleError {
    StoreError::outcome_unknown("the settle's background task ended before the store answered")
        .into()
}

/// The answer asked for again after it was taken.
fn taken() -> SettleError {
    StoreError::outcome_unknown("this settle's answer was already taken").into()
}

/// Starts `settle`: polls it once here (so that a store that settles at the call, as every
/// store does for an ack, has made the change before this returns), then, if it is not
/// done, lets it finish in a task of its own on `rt`.
pub(crate) fn start<O: Send + 'static, R: Runtime>(
    rt: &R,
    settle: impl Future<Output = Result<O, SettleError>> + Send + 'static,
) -> Settling<O> {
    let mut settle: BoxFuture<'static, Result<O, SettleError>> = Box::pin(settle);
    let waker = futures::task::noop_waker();
    if let Poll::Ready(r) = settle.as_mut().poll(&mut Context::from_waker(&waker)) {
        return Settling::done(r);
    }
    let (tx, rx) = oneshot::channel();
    // Detached: the task finishes the settle whether or not the `Settling` is kept.
    drop(rt.spawn(Box::pin(async move {
        let _ = tx.send(settle.await);
    })));
    Settling {
        state: State::Running(rx),
    }
}
