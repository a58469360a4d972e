//! The queue handle: push, close, wait for empty, stats; written once for every store.

use std::future::poll_fn;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use leaseq_core::{MessageId, Stats, Timestamp};

use crate::batch_error::BatchError;
use crate::closing::Closing;
use crate::driver;
use crate::error::PushError;
use crate::memory::MemoryStore;
use crate::push::Push;
use crate::runtime::{spawn_guarded, Runtime};
use crate::store::{StopWaiting, Store};

/// A lease queue on runtime `R`, its items kept by store `S` (in memory by default): clone
/// it freely across tasks and threads.
///
/// [`try_push`](Self::try_push) never waits, so sync code can feed a queue; [`push`](Self::push)
/// waits for room in a bounded queue. Receiving is a future. A received
/// [`Delivery`](crate::Delivery) must be acked or nacked; dropped, it goes back to the queue
/// at once (visible again after the config's backoff, as after any failed attempt). Each queue runs one small background task on its runtime, the *driver*: it
/// sleeps on one timer until the next lease deadline, end of a delay or heartbeat, applies
/// it, and sleeps again. It ends when the last handle is dropped and no lease is kept alive.
///
/// ```
/// use std::time::Duration;
/// use leaseq_async::{Config, LeaseQueue, Runtime, SimRuntime};
///
/// let rt = SimRuntime::new(); // virtual time: the 500 ms below pass instantly
/// rt.block_on({
///     let rt = rt.clone();
///     async move {
///         let config = Config::new(Duration::from_millis(500)).with_max_attempts(2);
///         let queue = LeaseQueue::with_runtime(rt.clone(), config).unwrap();
///         let id = queue.push("send invoice 981").await.unwrap();
///
///         // A worker takes it and hangs: the lease runs out, the item comes back after
///         // its backoff (by default 1 s, of which the jitter takes off up to half).
///         let stuck = queue.receive().await.unwrap();
///         let again = queue.receive().await.unwrap();
///         assert_eq!((again.id(), again.attempt()), (id, 2));
///         let backoff = rt.now().saturating_duration_since(stuck.deadline());
///         assert!(backoff >= Duration::from_millis(500) && backoff <= Duration::from_secs(1));
///
///         // The first worker wakes up: its ack is refused, the second one's accepted.
///         assert!(stuck.ack().await.is_err());
///         again.ack().await.unwrap();
///         assert_eq!(queue.stats().late_acks_stale, 1);
///     }
/// });
/// ```
///
/// See the adapter crates (`leaseq-tokio`, `leaseq-smol`) for the same on real runtimes.
pub struct LeaseQueue<T, R, S = MemoryStore<T, R>> {
    pub(crate) store: Arc<S>,
    /// Counts this value as a handle of the store until dropped.
    _handle: Handle<S>,
    _types: PhantomData<fn() -> (T, R)>,
}

/// One counted handle on a store: `handle_dropped` is called when it goes.
struct Handle<S> {
    store: Arc<S>,
    dropped: fn(&S),
}

/// A plain push, made once: `try_push` and `try_push_batch` pass it by reference, so that
/// no `Push` is built (and dropped) on their path.
static PLAIN: Push = Push::new();

impl<S> Drop for Handle<S> {
    fn drop(&mut self) {
        (self.dropped)(&self.store);
    }
}

impl<T: 'static, R: Runtime, S: Store<T, Runtime = R>> LeaseQueue<T, R, S> {
    /// A handle on `store` (its first, counted by the store already), with the queue's
    /// driver spawned on its runtime.
    pub fn start(store: Arc<S>) -> Self {
        let rt = store.runtime().clone();
        drop(spawn_guarded(
            &rt,
            driver::run::<T, S>(Arc::downgrade(&store)),
        ));
        Self::handle(store)
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> LeaseQueue<T, R, S> {
    /// A value for a handle the store has counted already.
    fn handle(store: Arc<S>) -> Self {
        LeaseQueue {
            _handle: Handle {
                store: store.clone(),
                dropped: <S as Store<T>>::handle_dropped,
            },
            store,
            _types: PhantomData,
        }
    }

    /// The store the items live in.
    pub fn store(&self) -> &Arc<S> {
        &self.store
    }

    /// The runtime this queue runs on.
    pub fn runtime(&self) -> &R {
        self.store.runtime()
    }

    /// The current time on this queue's clock.
    pub fn now(&self) -> Timestamp {
        self.store.runtime().now()
    }

    /// The queue's name (see [`QueueBuilder::name`](crate::QueueBuilder::name)).
    pub fn name(&self) -> &'static str {
        self.store.name()
    }

    /// The visibility timeout.
    pub fn visibility(&self) -> Duration {
        self.store.visibility()
    }

    /// Adds an item, visible at once, waiting for room if the queue is bounded and full.
    /// A closed queue hands the item back inside the error. With a durable store, `Ok`
    /// means the item is on disk (or committed on the server); when the store cannot
    /// confirm that, [`PushError::Unconfirmed`] says so (the item stays queued).
    ///
    /// Cancel-safe in the sense that matters: until it completes, nothing was queued
    /// unless the store had accepted it (then only its confirmation is not awaited).
    pub async fn push(&self, item: T) -> Result<MessageId, PushError<T>> {
        self.push_with(item, Push::new()).await
    }

    /// Adds an item as `push` says (delay, time to live, priority level, unique key),
    /// waiting for room like [`push`](Self::push):
    /// `q.push_with(item, Push::new().delay(Duration::from_secs(30))).await`.
    pub async fn push_with(&self, item: T, push: Push) -> Result<MessageId, PushError<T>> {
        let mut item = item;
        // A full queue's refusal is waited out here, never returned: the store does not
        // count it as rejected (`Stats::rejected` counts refusals the caller is given).
        let push = push.waiting_for_room();
        loop {
            match self.store.try_push(item, &push) {
                Err(PushError::Full(back)) => item = back,
                Ok(id) => {
                    // A durable store answers once the item is on disk, or says it could
                    // not confirm that (the item stays queued: the outcome is unknown).
                    return match self.store.synced().await {
                        Ok(()) => Ok(id),
                        Err(error) => Err(PushError::Unconfirmed { id, error }),
                    };
                }
                other => return other,
            }
            self.wait_for_space().await;
        }
    }

    /// Waits until a push may find room (or the queue closed).
    async fn wait_for_space(&self) {
        let mut waiting = S::Waiting::default();
        let guard = StopWaiting(&*self.store, &mut waiting);
        poll_fn(|cx| guard.0.poll_space(guard.1, cx)).await;
    }

    /// [`push`](Self::push) for a plain (non-async) thread: blocks it while a bounded queue
    /// is full and until a durable store confirms the item. Never call it from inside an
    /// async task: it would block that task's executor thread.
    pub fn push_blocking(&self, item: T) -> Result<MessageId, PushError<T>> {
        futures::executor::block_on(self.push(item))
    }

    /// Adds an item, visible at once. Never waits: a full or closed queue hands the item
    /// back inside the error. With a durable store it is fire and forget: the item is
    /// committed with the store's next batch, but `Ok` does not mean it is on disk yet (use
    /// [`push`](Self::push), which waits for that, or [`synced`](Self::synced)).
    #[inline]
    pub fn try_push(&self, item: T) -> Result<MessageId, PushError<T>> {
        self.store.try_push(item, &PLAIN)
    }

    /// Adds an item as `push` says (delay, time to live, priority level, unique key). Never
    /// waits; a refused item is handed back inside the error (for a held key, with the id of
    /// the item that holds it).
    pub fn try_push_with(&self, item: T, push: Push) -> Result<MessageId, PushError<T>> {
        self.store.try_push(item, &push)
    }

    /// Adds every item of `items`, in order, in one store step (one commit for a durable
    /// store), waiting for room in a bounded queue as [`push`](Self::push) does, then until
    /// the items are durable. A refusal other than a full queue (closed, ...) stops it: the
    /// error holds the ids accepted before it and hands back the refused item and the rest
    /// ([`BatchError`]). When the store cannot confirm the accepted items durable, the
    /// error is [`PushError::Unconfirmed`] (first accepted id) with nothing handed back.
    pub async fn push_batch<I>(&self, items: I) -> Result<Vec<MessageId>, BatchError<T>>
    where
        I: IntoIterator<Item = T>,
    {
        let push = Push::new().waiting_for_room();
        let mut accepted = Vec::new();
        let mut items: Vec<T> = items.into_iter().collect();
        let refusal = loop {
            let mut rest = items.into_iter();
            match self.store.try_push_batch(&mut rest, &push) {
                Ok(ids) => {
                    accepted.extend(ids);
                    break None;
                }
                Err((ids, PushError::Full(back))) => {
                    accepted.extend(ids);
                    items = std::iter::once(back).chain(rest).collect();
                    self.wait_for_space().await;
                }
                Err((ids, error)) => {
                    accepted.extend(ids);
                    break Some((error, rest.collect::<Vec<T>>()));
                }
            }
        };
        let synced = if accepted.is_empty() {
            Ok(())
        } else {
            self.store.synced().await
        };
        match (synced, refusal) {
            (Ok(()), None) => Ok(accepted),
            (Err(error), None) => {
                let id = accepted[0];
                Err(BatchError {
                    accepted,
                    error: PushError::Unconfirmed { id, error },
                    rest: Vec::new(),
                })
            }
            // The refusal is the answer; what was accepted before it is unconfirmed if the
            // sync failed, as the store's state says.
            (_, Some((error, rest))) => Err(BatchError {
                accepted,
                error,
                rest,
            }),
        }
    }

    /// Adds every item of `items` in one step, in order; never waits. Stops at the first
    /// refusal (a full queue included): the error holds the ids accepted before it and
    /// hands back the refused item and the rest. Fire and forget with a durable store, as
    /// [`try_push`](Self::try_push).
    pub fn try_push_batch<I>(&self, items: I) -> Result<Vec<MessageId>, BatchError<T>>
    where
        I: IntoIterator<Item = T>,
    {
        let mut items = items.into_iter();
        self.store
            .try_push_batch(&mut items, &PLAIN)
            .map_err(|(accepted, error)| BatchError {
                accepted,
                error,
                rest: items.collect(),
            })
    }

    /// Completes once every push made so far (fire-and-forget ones included) is durable;
    /// an error when the store could not confirm that before its commit timeout (those
    /// pushes stay queued: their outcome is unknown). At once for the in-memory store.
    pub async fn synced(&self) -> Result<(), crate::StoreError> {
        self.store.synced().await
    }

    /// Stops new receives and pushes. Receivers waiting now get `None`; deliveries already
    /// out can still be settled. Items left in the queue stay there (see [`stats`](Self::stats)).
    ///
    /// The close happens here; `q.close().await` also waits until everything accepted
    /// before it (fire-and-forget pushes included) is durable, and says so ([`Closing`]).
    pub fn close(&self) -> Closing<'_, T, R, S> {
        self.store.close();
        Closing::new(&self.store)
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.store.is_closed()
    }

    /// Completes when nothing is ready, delayed or in flight: every item pushed so far was
    /// acked or dead-lettered. (Dead letters do not count.)
    pub async fn wait_empty(&self) {
        let mut waiting = S::Waiting::default();
        let guard = StopWaiting(&*self.store, &mut waiting);
        poll_fn(|cx| guard.0.poll_empty(guard.1, cx)).await;
    }

    /// The queue's gauges and totals, brought up to date.
    pub fn stats(&self) -> Stats {
        self.store.stats()
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> Clone for LeaseQueue<T, R, S> {
    fn clone(&self) -> Self {
        self.store.handle_added();
        Self::handle(self.store.clone())
    }
}

impl<T, R, S: Store<T>> std::fmt::Debug for LeaseQueue<T, R, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseQueue")
            .field("name", &self.store.name())
            .field("closed", &self.store.is_closed())
            .finish_non_exhaustive()
    }
}
