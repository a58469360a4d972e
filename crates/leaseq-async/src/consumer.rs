//! A receiver that leases ahead, as a broker client's prefetch does.

use std::sync::Arc;

use crate::delivery::Delivery;
use crate::fetcher::Fetcher;
use crate::memory::MemoryStore;
use crate::queue::LeaseQueue;
use crate::runtime::{spawn_guarded, Runtime};
use crate::stop::Stopping;
use crate::store::Store;

/// A receiver with a prefetch: a task of its own keeps up to `prefetch` items leased
/// ahead, taken in one step of the store (one commit of their attempts on SQLite, one claim
/// statement on Postgres), so that [`receive`](Self::receive) usually answers from memory,
/// as a broker client with a prefetch does (RabbitMQ's `basic.qos`, a NATS pull
/// consumer's batch). With [`Delivery::ack_nowait`] a consumer that takes one item at a
/// time then waits on no commit at all.
///
/// A lease waits in the prefetch at most half the queue's visibility (then it goes back
/// and is leased again), so none is handed out with less than half its visibility left.
/// Dropping the consumer gives back what it holds, the attempts not counted. From
/// [`LeaseQueue::consumer`].
///
/// # Stopping without costing an attempt
///
/// [`stop`](Self::stop) (or a drop) begins the stop: [`stopping`](Self::stopping) futures
/// complete, so the code holding the consumer's deliveries sees it; `receive` answers
/// `None`; the prefetch goes back uncounted. A delivery still held then is the holder's:
/// finish it within your grace and settle it as usual, or give it back with
/// [`Delivery::put_back`], its attempt not counted and its checkpoint kept, visible at once
/// to the next process. (Dropped, it would go back as "dropped", the attempt counted.)
///
/// ```
/// use std::time::Duration;
/// use futures::future::{select, Either};
/// use leaseq_async::{Config, LeaseQueue, Runtime, SimRuntime};
///
/// let rt = SimRuntime::new();
/// rt.block_on({
///     let rt = rt.clone();
///     async move {
///         let queue = LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(30)))
///             .unwrap();
///         queue.try_push(17u32).unwrap();
///         let consumer = queue.consumer(4);
///         let d = consumer.receive().await.unwrap();
///         // The holder: a task working on the delivery, watching the stop.
///         let holder = rt.spawn(Box::pin({
///             let (rt, stopping) = (rt.clone(), consumer.stopping());
///             async move {
///                 let work = std::pin::pin!(rt.sleep_until(rt.now().saturating_add(Duration::from_secs(60))));
///                 // On the stop, a grace of 1 s for the work, then the item goes back.
///                 let grace = std::pin::pin!(async {
///                     stopping.await;
///                     rt.sleep_until(rt.now().saturating_add(Duration::from_secs(1))).await;
///                 });
///                 match select(work, grace).await {
///                     Either::Left(_) => drop(d.ack().await),
///                     Either::Right(_) => d.put_back(),
///                 }
///             }
///         }));
///         // The owner: stops (on SIGTERM, say), then waits for the holder.
///         rt.sleep_until(rt.now().saturating_add(Duration::from_secs(5))).await;
///         consumer.stop().await;
///         holder.await;
///         let again = queue.receive().await.unwrap();
///         assert_eq!(again.attempt(), 1, "the stop cost no attempt");
///     }
/// });
/// ```
///
/// ```
/// use std::time::Duration;
/// use leaseq_async::{Config, LeaseQueue, SimRuntime};
///
/// let rt = SimRuntime::new();
/// rt.block_on({
///     let rt = rt.clone();
///     async move {
///         let queue = LeaseQueue::with_runtime(rt, Config::new(Duration::from_secs(30))).unwrap();
///         for n in 0..10u32 {
///             queue.try_push(n).unwrap();
///         }
///         let consumer = queue.consumer(4);
///         let d = consumer.receive().await.unwrap();
///         assert_eq!(*d.item(), 0);
///         d.ack_nowait().await.unwrap();
///         // Stopped (or dropped): the leases it took ahead go back, their attempts not
///         // counted.
///         consumer.stop().await;
///         assert!(queue.stats().put_back > 0);
///         let rest = queue.try_receive_batch(100);
///         assert_eq!(rest.len(), 9);
///         assert!(rest.iter().all(|d| d.attempt() == 1));
///     }
/// });
/// ```
pub struct Consumer<T, R: Runtime, S: Store<T, Runtime = R> = MemoryStore<T, R>> {
    queue: LeaseQueue<T, R, S>,
    fetcher: Arc<Fetcher<T, R, S>>,
    task: Option<R::Task>,
}

impl<T: Send + 'static, R: Runtime, S: Store<T, Runtime = R>> Consumer<T, R, S> {
    pub(crate) fn start(queue: LeaseQueue<T, R, S>, prefetch: usize, heartbeat: bool) -> Self {
        let fetcher = Arc::new(Fetcher::new(prefetch, queue.visibility(), heartbeat));
        let task = spawn_guarded(queue.runtime(), fetcher.clone().run(queue.clone()));
        Consumer {
            queue,
            fetcher,
            task: Some(task),
        }
    }

    /// The next item, leased ahead or as soon as one is visible; `None` once the queue is
    /// closed. Cancel-safe: an item leaves the prefetch only in the poll that returns it.
    pub async fn receive(&self) -> Option<Delivery<T, R, S>> {
        self.fetcher
            .next(self.queue.runtime())
            .await
            .map(|(delivery, _)| delivery)
    }

    /// Completes once the consumer begins to stop ([`stop`](Self::stop), or dropped): for
    /// the code holding its deliveries, which then finishes them or puts them back (see
    /// [Stopping without costing an attempt](Self#stopping-without-costing-an-attempt)).
    /// Cheap, `Unpin`, `Send` and `'static`: make one per holder before the stop.
    pub fn stopping(&self) -> Stopping {
        self.fetcher.stopping()
    }

    /// The queue it receives from.
    pub fn queue(&self) -> &LeaseQueue<T, R, S> {
        &self.queue
    }

    /// Stops leasing ahead and waits until every lease it held is given back (their
    /// attempts not counted); [`stopping`](Self::stopping) futures complete at once.
    /// Dropping the consumer does the same without waiting.
    pub async fn stop(mut self) {
        self.fetcher.stop();
        if let Some(task) = self.task.take() {
            task.await;
        }
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> Drop for Consumer<T, R, S> {
    fn drop(&mut self) {
        // The task sees the stop, gives back what the prefetch holds and ends.
        self.fetcher.stop();
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> std::fmt::Debug for Consumer<T, R, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer").finish_non_exhaustive()
    }
}

impl<T: Send + 'static, R: Runtime, S: Store<T, Runtime = R>> LeaseQueue<T, R, S> {
    /// A receiver that keeps up to `prefetch` items leased ahead (see [`Consumer`]).
    pub fn consumer(&self, prefetch: usize) -> Consumer<T, R, S> {
        Consumer::start(self.clone(), prefetch, false)
    }

    /// [`consumer`](Self::consumer) whose leases the queue's heartbeat keeps alive until
    /// they are settled (in the prefetch too, for at most half the visibility).
    pub fn consumer_with_heartbeat(&self, prefetch: usize) -> Consumer<T, R, S> {
        Consumer::start(self.clone(), prefetch, true)
    }
}
