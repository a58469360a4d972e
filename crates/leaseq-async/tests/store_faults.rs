//! Store failures at the seam, as the shared layer reports them: a wrapper store that lets
//! a `MemoryStore` do the work and fails chosen calls (a commit that cannot be confirmed, a
//! settle not done, a settle whose outcome is unknown). Each test pins how the failure
//! reaches the caller typed, and fails on the layer that turned a failed commit into `Ok`
//! or counted a store failure as a stale settle (virtual time).

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use leaseq_async::{
    Acked, CancelError, Config, Drive, Extended, Failure, LeaseLost, LeaseQueue, MemoryStore,
    MemoryTicket, MemoryWaiting, MessageId, Nacked, Pool, Push, PushError, Runtime, SettleError,
    SimRuntime, Stats, Store, StoreError, Taken, Timestamp,
};

/// Which calls fail, as counters of calls still to fail (`u32::MAX`: every one).
#[derive(Default)]
struct Faults {
    /// `synced` answers "outcome unknown".
    sync: AtomicU32,
    /// Settles (ack, nack, dead letter) answer "not done" without reaching the store.
    settle_not_done: AtomicU32,
    /// Settles are made, then answer "outcome unknown" (the reply was lost).
    settle_reply_lost: AtomicU32,
}

fn take(counter: &AtomicU32) -> bool {
    counter
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n > 0).then(|| if n == u32::MAX { n } else { n - 1 })
        })
        .is_ok()
}

/// A memory store with faults injected at the seam.
struct Faulty {
    inner: Arc<MemoryStore<u32, SimRuntime>>,
    faults: Faults,
}

impl Faulty {
    /// A settle as the faults say: not sent (`None`: the caller runs nothing), or sent.
    fn not_sent(&self) -> Option<SettleError> {
        take(&self.faults.settle_not_done)
            .then(|| StoreError::not_done("injected: no connection").into())
    }

    /// The answer of a settle that was made, unless its reply is lost.
    fn answer<U>(&self, r: Result<U, SettleError>) -> Result<U, SettleError> {
        if take(&self.faults.settle_reply_lost) {
            return Err(StoreError::outcome_unknown("injected: reply lost").into());
        }
        r
    }
}

impl Store<u32> for Faulty {
    type Runtime = SimRuntime;
    type Ticket = MemoryTicket;
    type Waiting = MemoryWaiting;

    fn runtime(&self) -> &SimRuntime {
        self.inner.runtime()
    }
    fn visibility(&self) -> Duration {
        self.inner.visibility()
    }
    fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
    fn close(&self) {
        self.inner.close()
    }
    fn handle_added(&self) {
        self.inner.handle_added()
    }
    fn handle_dropped(&self) {
        self.inner.handle_dropped()
    }
    fn try_push(&self, item: u32, push: &Push) -> Result<MessageId, PushError<u32>> {
        self.inner.try_push(item, push)
    }
    fn cancel(
        &self,
        id: MessageId,
        leased: bool,
    ) -> impl Future<Output = Result<u32, CancelError>> + Send {
        self.inner.cancel(id, leased)
    }
    fn try_push_batch(
        &self,
        items: &mut dyn Iterator<Item = u32>,
    ) -> Result<Vec<MessageId>, PushError<u32>> {
        self.inner.try_push_batch(items)
    }
    fn poll_space(&self, waiting: &mut MemoryWaiting, cx: &mut Context<'_>) -> Poll<()> {
        self.inner.poll_space(waiting, cx)
    }
    fn poll_take(
        self: &Arc<Self>,
        waiting: &mut MemoryWaiting,
        cx: &mut Context<'_>,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<Taken<u32, MemoryTicket>>,
    ) -> Poll<bool> {
        self.inner.poll_take(waiting, cx, max, heartbeat, out)
    }
    fn poll_take_one(
        self: &Arc<Self>,
        waiting: &mut MemoryWaiting,
        cx: &mut Context<'_>,
        heartbeat: bool,
    ) -> Poll<Option<Taken<u32, MemoryTicket>>> {
        self.inner.poll_take_one(waiting, cx, heartbeat)
    }
    fn try_take(
        self: &Arc<Self>,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<Taken<u32, MemoryTicket>>,
    ) -> usize {
        self.inner.try_take(max, heartbeat, out)
    }
    fn poll_empty(&self, waiting: &mut MemoryWaiting, cx: &mut Context<'_>) -> Poll<()> {
        self.inner.poll_empty(waiting, cx)
    }
    fn stop_waiting(&self, waiting: &mut MemoryWaiting) {
        self.inner.stop_waiting(waiting)
    }
    // A settle not sent drops its ticket: the lease runs out by itself.
    async fn ack(&self, ticket: MemoryTicket) -> Result<Acked, SettleError> {
        if let Some(e) = self.not_sent() {
            return Err(e);
        }
        self.answer(self.inner.ack(ticket).await)
    }
    async fn ack_many(&self, tickets: Vec<MemoryTicket>) -> Vec<Result<Acked, SettleError>> {
        let mut out = Vec::with_capacity(tickets.len());
        for ticket in tickets {
            out.push(self.ack(ticket).await);
        }
        out
    }
    async fn nack(&self, ticket: MemoryTicket, failure: Failure) -> Result<Nacked, SettleError> {
        if let Some(e) = self.not_sent() {
            return Err(e);
        }
        self.answer(self.inner.nack(ticket, failure).await)
    }
    async fn dead_letter(&self, ticket: MemoryTicket, error: String) -> Result<u32, SettleError> {
        if let Some(e) = self.not_sent() {
            return Err(e);
        }
        self.answer(self.inner.dead_letter(ticket, error).await)
    }
    fn extend(
        &self,
        ticket: &mut MemoryTicket,
        visibility: Duration,
    ) -> impl Future<Output = Result<Extended, SettleError>> + Send {
        self.inner.extend(ticket, visibility)
    }
    fn hand_back(&self, ticket: MemoryTicket) {
        self.inner.hand_back(ticket)
    }
    fn stop_heartbeat(&self, ticket: &mut MemoryTicket) {
        self.inner.stop_heartbeat(ticket)
    }
    fn has_heartbeat(&self, ticket: &MemoryTicket) -> bool {
        self.inner.has_heartbeat(ticket)
    }
    fn is_lease_lost(&self, ticket: &MemoryTicket, deadline: Timestamp) -> bool {
        self.inner.is_lease_lost(ticket, deadline)
    }
    fn lease_lost(&self, ticket: &MemoryTicket, deadline: Timestamp) -> LeaseLost {
        self.inner.lease_lost(ticket, deadline)
    }
    fn drive(&self) -> impl Future<Output = Drive> + Send {
        self.inner.drive()
    }
    fn listen_driver(&self) -> event_listener::EventListener {
        self.inner.listen_driver()
    }
    fn stats(&self) -> Stats {
        self.inner.stats()
    }
    async fn synced(&self) -> Result<(), StoreError> {
        if take(&self.faults.sync) {
            return Err(StoreError::outcome_unknown(
                "injected: commit not confirmed",
            ));
        }
        Ok(())
    }
}

type Q = LeaseQueue<u32, SimRuntime, Faulty>;

/// A queue on a faulty memory store: visibility 10 s, 3 attempts, no backoff.
fn queue(rt: &SimRuntime) -> (Q, Arc<Faulty>) {
    let config = Config::new(Duration::from_secs(10)).with_max_attempts(3);
    let core = leaseq_async::core::Queue::new(config).expect("a valid config");
    let inner = MemoryStore::from_core(rt.clone(), core, Duration::from_secs(3), "faulty");
    let store = Arc::new(Faulty {
        inner: Arc::new(inner),
        faults: Faults::default(),
    });
    (LeaseQueue::start(store.clone()), store)
}

/// An awaited push whose commit the store cannot confirm answers `Unconfirmed` with the id
/// the queue kept (it was `Ok` whatever `synced` said); a fire-and-forget push is not
/// affected; `close().await` reports the same failure, and `Ok` once commits go through.
#[test]
fn an_unconfirmed_commit_is_not_ok() {
    let rt = SimRuntime::new();
    rt.block_on(async {
        let (q, store) = queue(&rt);
        store.faults.sync.store(1, Ordering::Release);
        let err = q.push(1).await.expect_err("the commit was not confirmed");
        let PushError::Unconfirmed { id, ref error } = err else {
            panic!("expected Unconfirmed, got {err:?}");
        };
        assert!(error.is_outcome_unknown(), "{error}");
        assert!(err.into_item().is_none(), "the queue kept the item");
        // The item stays queued under that id: the outcome is unknown, not "not done".
        let d = q
            .receive()
            .await
            .expect("the unconfirmed item is still queued");
        assert_eq!((d.id(), *d.item()), (id, 1));
        d.ack().await.expect("ack");

        q.try_push(2)
            .expect("fire and forget does not wait for the commit");
        store.faults.sync.store(1, Ordering::Release);
        let closing = q.close().await;
        assert!(
            closing.as_ref().is_err_and(StoreError::is_outcome_unknown),
            "{closing:?}"
        );
        assert_eq!(q.close().await, Ok(()));
    });
}

/// A settle the store did not make is `SettleError::Store` (not done), one whose reply was
/// lost is `SettleError::Store` (outcome unknown): neither is a stale receipt, and neither
/// is `Ok`.
#[test]
fn settle_failures_are_typed_not_stale() {
    let rt = SimRuntime::new();
    rt.block_on(async {
        let (q, store) = queue(&rt);
        for i in 0..3 {
            q.push(i).await.expect("push");
        }
        store.faults.settle_not_done.store(1, Ordering::Release);
        let d = q.receive().await.expect("an item");
        let err = d.ack().await.expect_err("not sent");
        assert!(err.stale().is_none() && !err.is_outcome_unknown(), "{err}");
        assert!(err
            .store()
            .is_some_and(|e| e.message().contains("no connection")));

        store.faults.settle_reply_lost.store(1, Ordering::Release);
        let d = q.receive().await.expect("an item");
        let err = d.nack("again").await.expect_err("reply lost");
        assert!(err.is_outcome_unknown(), "{err}");
        assert!(err != leaseq_async::ReceiptError::Unknown);

        // The ack that was not sent left its lease to run out, and the nack whose reply was
        // lost went through: both items come back for a second attempt, the third is
        // untouched. Nothing was acked.
        rt.sleep_until(rt.now().saturating_add(Duration::from_secs(11)))
            .await;
        let mut attempts = Vec::new();
        while let Some(d) = q.try_receive() {
            attempts.push((*d.item(), d.attempt()));
            d.ack().await.expect("ack");
        }
        attempts.sort_unstable();
        assert_eq!(attempts, [(0, 2), (1, 2), (2, 1)]);
    });
}

/// A pool counts settles the store failed as `failed_settles`, not as stale settles, and
/// `ack_batch` puts them in `failed()`, not in `stale()`.
#[test]
fn pool_and_ack_batch_count_store_failures_apart() {
    let rt = SimRuntime::new();
    rt.block_on(async {
        let (q, store) = queue(&rt);
        for i in 0..4 {
            q.push(i).await.expect("push");
        }
        store.faults.settle_reply_lost.store(2, Ordering::Release);
        let batch = q.ack_batch(vec![
            q.receive().await.expect("an item"),
            q.receive().await.expect("an item"),
            q.receive().await.expect("an item"),
        ]);
        let batch = batch.await;
        assert_eq!(batch.accepted(), 1);
        assert_eq!(batch.failed().len(), 2);
        assert!(batch.stale().is_empty());
        assert!(!batch.all_accepted());

        store.faults.settle_not_done.store(1, Ordering::Release);
        let pool = Pool::builder(q.clone())
            .workers(1)
            .spawn(|_job| async { Ok(()) });
        // The one item left is handled once; its ack is not sent, so its lease runs out
        // and it is handled again (acked then).
        q.wait_empty().await;
        let stats = pool.stats();
        assert_eq!(stats.failed_settles, 1, "{stats:?}");
        assert_eq!(stats.stale_settles, 0, "{stats:?}");
        pool.shutdown(Duration::ZERO).await;
    });
}
