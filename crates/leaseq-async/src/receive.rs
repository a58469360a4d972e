//! Receiving: a cancel-safe future, and a stream.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use event_listener::EventListener;
use futures::Stream;

use crate::delivery::Delivery;
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;
use crate::shared::Shared;

/// The future of [`LeaseQueue::receive`](crate::LeaseQueue::receive).
///
/// Cancel-safe: items are taken from the queue only inside the poll that returns them, so
/// dropping this future at any point loses nothing. A wake-up it had been given but did not
/// use passes to the next waiting receiver.
#[must_use = "futures do nothing unless polled"]
pub struct Receive<'a, T, R: Runtime> {
    shared: &'a Arc<Shared<T, R>>,
    max: usize,
    heartbeat: bool,
    listener: Option<EventListener>,
}

impl<'a, T: Clone, R: Runtime> Receive<'a, T, R> {
    pub(crate) fn new(shared: &'a Arc<Shared<T, R>>, max: usize, heartbeat: bool) -> Self {
        Receive {
            shared,
            max,
            heartbeat,
            listener: None,
        }
    }

    pub(crate) fn batch(self) -> ReceiveBatch<'a, T, R> {
        ReceiveBatch(self)
    }

    /// See [`poll_receive`].
    fn poll_into(&mut self, cx: &mut Context<'_>, out: &mut Vec<Delivery<T, R>>) -> Poll<()> {
        poll_receive(
            self.shared,
            &mut self.listener,
            self.max,
            self.heartbeat,
            cx,
            out,
        )
    }
}

/// Polls for up to `max` deliveries into `out`; ready when it got one or the queue closed.
fn poll_receive<T: Clone, R: Runtime>(
    shared: &Arc<Shared<T, R>>,
    listener: &mut Option<EventListener>,
    max: usize,
    heartbeat: bool,
    cx: &mut Context<'_>,
    out: &mut Vec<Delivery<T, R>>,
) -> Poll<()> {
    poll_until(shared, listener, cx, || {
        (shared.take_batch(max, heartbeat, out) > 0).then_some(())
    })
    .map(|_| ())
}

/// Polls for one delivery; ready with `None` once the queue is closed. A one-item receive
/// needs no vector: the common case allocates nothing.
fn poll_one<T: Clone, R: Runtime>(
    shared: &Arc<Shared<T, R>>,
    listener: &mut Option<EventListener>,
    heartbeat: bool,
    cx: &mut Context<'_>,
) -> Poll<Option<Delivery<T, R>>> {
    poll_until(shared, listener, cx, || shared.take_one(heartbeat))
}

/// The receive loop: `take` until it yields something or the queue is closed, sleeping on
/// the `available` signal in between. Listen, then look again, so that an item pushed in
/// between is not missed.
fn poll_until<T, R: Runtime, U>(
    shared: &Shared<T, R>,
    listener: &mut Option<EventListener>,
    cx: &mut Context<'_>,
    mut take: impl FnMut() -> Option<U>,
) -> Poll<Option<U>> {
    loop {
        if let Some(got) = take() {
            stop_listening(shared, listener);
            return Poll::Ready(Some(got));
        }
        if shared.is_closed() {
            stop_listening(shared, listener);
            return Poll::Ready(None);
        }
        match listener {
            None => *listener = Some(shared.available.listen()),
            Some(l) => {
                if Pin::new(l).poll(cx).is_pending() {
                    return Poll::Pending;
                }
                stop_listening(shared, listener);
            }
        }
    }
}

/// Gives back the listener, if one is held (see [`Signal`](crate::shared::Signal)).
#[inline]
fn stop_listening<T, R: Runtime>(shared: &Shared<T, R>, listener: &mut Option<EventListener>) {
    if let Some(l) = listener.take() {
        shared.available.unlisten(l);
    }
}

impl<T: Clone, R: Runtime> Future for Receive<'_, T, R> {
    type Output = Option<Delivery<T, R>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        poll_one(this.shared, &mut this.listener, this.heartbeat, cx)
    }
}

impl<T, R: Runtime> Drop for Receive<'_, T, R> {
    fn drop(&mut self) {
        stop_listening(self.shared, &mut self.listener);
    }
}

/// Receives a batch (see [`LeaseQueue::receive_batch`](crate::LeaseQueue::receive_batch)).
pub(crate) struct ReceiveBatch<'a, T, R: Runtime>(Receive<'a, T, R>);

impl<T: Clone, R: Runtime> Future for ReceiveBatch<'_, T, R> {
    type Output = Vec<Delivery<T, R>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut out = Vec::new();
        match this.0.poll_into(cx, &mut out) {
            Poll::Ready(()) => Poll::Ready(out),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Deliveries as a [`Stream`], from [`LeaseQueue::stream`](crate::LeaseQueue::stream). Ends
/// when the queue is closed. Dropping it between items loses nothing.
///
/// A stream is a handle of its queue like a [`LeaseQueue`] clone: while it lives, the queue's
/// background work (delays ending, leases running out, items expiring) goes on even if every
/// other handle is gone.
#[must_use = "streams do nothing unless polled"]
pub struct ReceiveStream<T, R: Runtime> {
    queue: LeaseQueue<T, R>,
    listener: Option<EventListener>,
}

impl<T, R: Runtime> ReceiveStream<T, R> {
    pub(crate) fn new(queue: LeaseQueue<T, R>) -> Self {
        ReceiveStream {
            queue,
            listener: None,
        }
    }
}

impl<T, R: Runtime> ReceiveStream<T, R> {
    /// The queue this stream receives from.
    pub fn queue(&self) -> &LeaseQueue<T, R> {
        &self.queue
    }
}

impl<T: Clone, R: Runtime> Stream for ReceiveStream<T, R> {
    type Item = Delivery<T, R>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        poll_one(&this.queue.shared, &mut this.listener, false, cx)
    }
}

impl<T, R: Runtime> Drop for ReceiveStream<T, R> {
    fn drop(&mut self) {
        stop_listening(&self.queue.shared, &mut self.listener);
    }
}

/// Receiving: each delivery gets its own copy of the item (`T: Clone`; queue `Arc<U>` for
/// items that are costly to copy).
impl<T: Clone, R: Runtime> LeaseQueue<T, R> {
    /// Waits for the next visible item and leases it; `None` once the queue is closed.
    ///
    /// Cancel-safe: an item is taken from the queue only in the poll that returns it, so
    /// dropping this future at any point loses nothing.
    pub fn receive(&self) -> Receive<'_, T, R> {
        Receive::new(&self.shared, 1, false)
    }

    /// Like [`receive`](Self::receive), and keeps the lease alive with the queue's heartbeat
    /// until the delivery is settled or dropped.
    pub fn receive_with_heartbeat(&self) -> Receive<'_, T, R> {
        Receive::new(&self.shared, 1, true)
    }

    /// Leases whatever is visible now, up to `max` items, under one lock and one clock read.
    /// Never waits; an empty vector when nothing is visible.
    pub fn try_receive_batch(&self, max: usize) -> Vec<Delivery<T, R>> {
        let mut out = Vec::new();
        self.shared.take_batch(max, false, &mut out);
        out
    }

    /// Waits until at least one item is visible, then leases up to `max` under one lock.
    /// Empty only once the queue is closed, or at once when `max` is zero. Cancel-safe like
    /// [`receive`](Self::receive).
    pub async fn receive_batch(&self, max: usize) -> Vec<Delivery<T, R>> {
        if max == 0 {
            return Vec::new();
        }
        Receive::new(&self.shared, max, false).batch().await
    }

    /// Deliveries as a [`futures::Stream`]; ends when the queue is closed.
    pub fn stream(&self) -> ReceiveStream<T, R> {
        ReceiveStream::new(self.clone())
    }
}
