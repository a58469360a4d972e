//! Receiving: a cancel-safe future, a batch, and a stream; written once for every store.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;

use crate::delivery::Delivery;
use crate::memory::MemoryStore;
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;
use crate::store::{StopWaiting, Store, TakeHeartbeat};

/// Why [`LeaseQueue::receive_timeout`] returned without an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReceiveError {
    /// Nothing became visible in time.
    Timeout,
    /// The queue was closed.
    Closed,
}

impl std::fmt::Display for ReceiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ReceiveError::Timeout => "no item became visible in time",
            ReceiveError::Closed => "the queue is closed",
        })
    }
}

impl std::error::Error for ReceiveError {}

/// The future of [`LeaseQueue::receive`](crate::LeaseQueue::receive).
///
/// Cancel-safe: items are taken from the queue only inside the poll that returns them, so
/// dropping this future at any point loses nothing. A wake-up it had been given but did not
/// use passes to the next waiting receiver.
#[must_use = "futures do nothing unless polled"]
pub struct Receive<'a, T, R: Runtime, S: Store<T, Runtime = R> = MemoryStore<T, R>> {
    store: &'a Arc<S>,
    heartbeat: TakeHeartbeat,
    waiting: S::Waiting,
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> Future for Receive<'_, T, R, S> {
    type Output = Option<Delivery<T, R, S>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let store = this.store;
        // Each delivery made where the store takes its lease (no `Taken` copied into it).
        let deliver = |t| Delivery::new(store.clone(), t);
        store.poll_take_one_into(&mut this.waiting, cx, this.heartbeat, deliver)
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> Drop for Receive<'_, T, R, S> {
    fn drop(&mut self) {
        self.store.stop_waiting(&mut self.waiting);
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> std::fmt::Debug for Receive<'_, T, R, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receive")
            .field("heartbeat", &self.heartbeat)
            .finish_non_exhaustive()
    }
}

/// Deliveries as a [`Stream`], from [`LeaseQueue::stream`](crate::LeaseQueue::stream). Ends
/// when the queue is closed. Dropping it between items loses nothing.
///
/// A stream is a handle of its queue like a [`LeaseQueue`] clone: while it lives, the queue's
/// background work (delays ending, leases running out, items expiring) goes on even if every
/// other handle is gone.
#[must_use = "streams do nothing unless polled"]
pub struct ReceiveStream<T, R: Runtime, S: Store<T, Runtime = R> = MemoryStore<T, R>> {
    queue: LeaseQueue<T, R, S>,
    waiting: S::Waiting,
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> ReceiveStream<T, R, S> {
    /// The queue this stream receives from.
    pub fn queue(&self) -> &LeaseQueue<T, R, S> {
        &self.queue
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> Stream for ReceiveStream<T, R, S> {
    type Item = Delivery<T, R, S>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let store = &this.queue.store;
        store.poll_take_one_into(&mut this.waiting, cx, TakeHeartbeat::Off, |t| {
            Delivery::new(store.clone(), t)
        })
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> Drop for ReceiveStream<T, R, S> {
    fn drop(&mut self) {
        self.queue.store.stop_waiting(&mut self.waiting);
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> std::fmt::Debug for ReceiveStream<T, R, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReceiveStream").finish_non_exhaustive()
    }
}

/// Receiving: each delivery gets its own copy of the item (`T: Clone`; queue `Arc<U>` for
/// items that are costly to copy).
impl<T, R: Runtime, S: Store<T, Runtime = R>> LeaseQueue<T, R, S> {
    /// Waits for the next visible item and leases it; `None` once the queue is closed.
    ///
    /// Cancel-safe: an item is taken from the queue only in the poll that returns it, so
    /// dropping this future at any point loses nothing.
    pub fn receive(&self) -> Receive<'_, T, R, S> {
        Receive {
            store: &self.store,
            heartbeat: TakeHeartbeat::Off,
            waiting: S::Waiting::default(),
        }
    }

    /// Like [`receive`](Self::receive), and keeps the lease alive with the queue's heartbeat
    /// until the delivery is settled or dropped.
    pub fn receive_with_heartbeat(&self) -> Receive<'_, T, R, S> {
        Receive {
            store: &self.store,
            heartbeat: TakeHeartbeat::AtTake,
            waiting: S::Waiting::default(),
        }
    }

    /// [`receive_with_heartbeat`](Self::receive_with_heartbeat) whose heartbeat starts when
    /// the pool's handler first waits (see [`TakeHeartbeat::Later`]).
    pub(crate) fn receive_beat_on_wait(&self) -> Receive<'_, T, R, S> {
        Receive {
            store: &self.store,
            heartbeat: TakeHeartbeat::Later,
            waiting: S::Waiting::default(),
        }
    }

    /// Leases one item if one is visible now; never waits.
    pub fn try_receive(&self) -> Option<Delivery<T, R, S>> {
        let mut taken = Vec::with_capacity(1);
        self.store.try_take(1, false, &mut taken);
        self.deliveries(taken).pop()
    }

    /// Like [`receive`](Self::receive), giving up after `timeout` (on the queue's clock).
    pub async fn receive_timeout(
        &self,
        timeout: std::time::Duration,
    ) -> Result<Delivery<T, R, S>, ReceiveError> {
        let at = self.runtime().now().saturating_add(timeout);
        let sleep = std::pin::pin!(self.runtime().sleep_until(at));
        match futures::future::select(self.receive(), sleep).await {
            futures::future::Either::Left((Some(d), _)) => Ok(d),
            futures::future::Either::Left((None, _)) => Err(ReceiveError::Closed),
            futures::future::Either::Right(_) => Err(ReceiveError::Timeout),
        }
    }

    /// [`receive`](Self::receive) for a plain (non-async) thread: blocks it until an item is
    /// visible; `None` once the queue is closed. Never call it from inside an async task:
    /// it would block that task's executor thread.
    pub fn receive_blocking(&self) -> Option<Delivery<T, R, S>> {
        futures::executor::block_on(self.receive())
    }

    /// Leases whatever is visible now, up to `max` items, in one step with one clock read.
    /// Never waits; an empty vector when nothing is visible.
    pub fn try_receive_batch(&self, max: usize) -> Vec<Delivery<T, R, S>> {
        let mut taken = Vec::new();
        self.store.try_take(max, false, &mut taken);
        self.deliveries(taken)
    }

    /// Waits until at least one item is visible, then leases up to `max` in one step. Empty
    /// only once the queue is closed, or at once when `max` is zero. Cancel-safe like
    /// [`receive`](Self::receive).
    pub async fn receive_batch(&self, max: usize) -> Vec<Delivery<T, R, S>> {
        if max == 0 {
            return Vec::new();
        }
        let mut out = self.store.spare_deliveries();
        let mut waiting = S::Waiting::default();
        let store = &self.store;
        let wait = StopWaiting(&**store, &mut waiting);
        // Each lease becomes its delivery as the store takes it (no vector of `Taken`s).
        std::future::poll_fn(|cx| {
            store.poll_take_into(&mut *wait.1, cx, max, false, &mut out, |t| {
                Delivery::new(store.clone(), t)
            })
        })
        .await;
        drop(wait);
        out
    }

    /// Deliveries as a [`futures::Stream`]; ends when the queue is closed.
    pub fn stream(&self) -> ReceiveStream<T, R, S> {
        ReceiveStream {
            queue: self.clone(),
            waiting: S::Waiting::default(),
        }
    }

    fn deliveries(&self, taken: Vec<crate::store::Taken<T, S::Ticket>>) -> Vec<Delivery<T, R, S>> {
        taken
            .into_iter()
            .map(|t| Delivery::new(self.store.clone(), t))
            .collect()
    }
}
