//! A memory store with faults injected at the seam, and commits that take time: what the
//! shared layer sees of a durable store, in virtual time.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use leaseq_async::{
    Acked, AdminError, CancelError, CodecError, Config, DeadFilter, DeadLetter, Drive, Extended,
    Failure, ItemView, LeaseLost, LeaseQueue, MemoryStore, MemoryTicket, MemoryWaiting, MessageId,
    Nacked, Page, Push, PushError, RedriveError, Runtime, ScheduleCommit, ScheduleCommitError,
    ScheduleCommitted, ScheduleState, SettleError, SimRuntime, Stats, Store, StoreError, Taken,
    Timestamp,
};

/// Which calls fail, as counters of calls still to fail (`u32::MAX`: every one).
#[derive(Default)]
pub(crate) struct Faults {
    /// `synced` answers "outcome unknown".
    pub(crate) sync: AtomicU32,
    /// Settles (ack, nack, dead letter) answer "not done" without reaching the store.
    pub(crate) settle_not_done: AtomicU32,
    /// Settles are made, then answer "outcome unknown" (the reply was lost).
    pub(crate) settle_reply_lost: AtomicU32,
    /// Operator calls (cancel, redrive, purge, listings) answer "not done" without reaching
    /// the store.
    pub(crate) admin_not_done: AtomicU32,
    /// Schedule reads and commits answer "not done" without reaching the store.
    pub(crate) schedule_not_done: AtomicU32,
    /// Schedule commits are made, then answer "outcome unknown" (the reply was lost).
    pub(crate) schedule_reply_lost: AtomicU32,
}

/// Work run on the inner store between a schedule's read and its commit (another process
/// moving the cursor in between, say).
pub(crate) type Between = Box<dyn FnOnce(&MemoryStore<u32, SimRuntime>) + Send>;

fn take(counter: &AtomicU32) -> bool {
    counter
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n > 0).then(|| if n == u32::MAX { n } else { n - 1 })
        })
        .is_ok()
}

/// A memory store with faults injected at the seam.
pub(crate) struct Faulty {
    pub(crate) inner: Arc<MemoryStore<u32, SimRuntime>>,
    pub(crate) faults: Faults,
    /// How long a settle's commit takes, in virtual time: its answer comes that long after
    /// the change was made (as a durable store answers once it committed). Zero: at once.
    pub(crate) commit: Duration,
    /// Settles answered so far (committed, whatever the answer).
    pub(crate) answered: AtomicU32,
    /// Claims its settles are ready at once (`Store::settles_at_once`), whatever `commit`
    /// says: a store that breaks that promise.
    pub(crate) claims_at_once: AtomicBool,
    /// Run at the next schedule commit, before it is made.
    pub(crate) before_commit: Mutex<Option<Between>>,
}

impl Faulty {
    /// An operator call's injected failure, if one is due.
    fn admin(&self) -> Result<(), StoreError> {
        if take(&self.faults.admin_not_done) {
            return Err(StoreError::not_done("injected: operator call not done"));
        }
        Ok(())
    }

    /// A settle as the faults say: not sent (`None`: the caller runs nothing), or sent.
    fn not_sent(&self) -> Option<SettleError> {
        take(&self.faults.settle_not_done)
            .then(|| StoreError::not_done("injected: no connection").into())
    }

    /// The answer of a settle that was made, once its commit is done, unless its reply is
    /// lost.
    async fn answer<U>(&self, r: Result<U, SettleError>) -> Result<U, SettleError> {
        if !self.commit.is_zero() {
            let rt = self.inner.runtime();
            rt.sleep_until(rt.now().saturating_add(self.commit)).await;
        }
        self.answered.fetch_add(1, Ordering::SeqCst);
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
    async fn cancel(&self, id: MessageId, leased: bool) -> Result<u32, AdminError<CancelError>> {
        self.admin()?;
        self.inner.cancel(id, leased).await
    }
    fn try_push_batch(
        &self,
        items: &mut dyn Iterator<Item = u32>,
        push: &Push,
    ) -> Result<Vec<MessageId>, (Vec<MessageId>, PushError<u32>)> {
        self.inner.try_push_batch(items, push)
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
        let made = self.inner.ack(ticket).await;
        self.answer(made).await
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
        let made = self.inner.nack(ticket, failure).await;
        self.answer(made).await
    }
    async fn dead_letter(&self, ticket: MemoryTicket, error: String) -> Result<u32, SettleError> {
        if let Some(e) = self.not_sent() {
            return Err(e);
        }
        let made = self.inner.dead_letter(ticket, error).await;
        self.answer(made).await
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
    fn put_back(&self, ticket: MemoryTicket) {
        self.inner.put_back(ticket)
    }
    fn stop_heartbeat(&self, ticket: &mut MemoryTicket) {
        self.inner.stop_heartbeat(ticket)
    }
    fn settles_at_once(&self) -> bool {
        self.claims_at_once.load(Ordering::SeqCst)
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
    async fn peek(&self, page: Page) -> Result<Vec<ItemView>, StoreError> {
        self.admin()?;
        Store::peek(&*self.inner, page).await
    }
    async fn dead_letters(
        &self,
        page: Page,
    ) -> Result<Vec<DeadLetter<Result<u32, CodecError>>>, StoreError> {
        self.admin()?;
        Store::dead_letters(&*self.inner, page).await
    }
    async fn redrive(&self, id: MessageId) -> Result<MessageId, AdminError<RedriveError>> {
        self.admin()?;
        Store::redrive(&*self.inner, id).await
    }
    async fn redrive_matching(&self, filter: DeadFilter<u32>) -> Result<u64, StoreError> {
        self.admin()?;
        Store::redrive_matching(&*self.inner, filter).await
    }
    async fn purge_dead_matching(&self, filter: DeadFilter<u32>) -> Result<u64, StoreError> {
        self.admin()?;
        Store::purge_dead_matching(&*self.inner, filter).await
    }
    async fn set_paused(&self, paused: bool) -> Result<bool, StoreError> {
        self.admin()?;
        Store::set_paused(&*self.inner, paused).await
    }
    async fn purge(&self) -> Result<u64, StoreError> {
        self.admin()?;
        Store::purge(&*self.inner).await
    }
    async fn schedule(&self, name: &str) -> Result<Option<ScheduleState>, StoreError> {
        if take(&self.faults.schedule_not_done) {
            return Err(StoreError::not_done("injected: schedule read not done"));
        }
        Store::schedule(&*self.inner, name).await
    }
    async fn commit_schedule(
        &self,
        step: ScheduleCommit<u32>,
    ) -> Result<ScheduleCommitted, ScheduleCommitError<u32>> {
        if take(&self.faults.schedule_not_done) {
            return Err(StoreError::not_done("injected: schedule commit not done").into());
        }
        let between = self.before_commit.lock().unwrap().take();
        if let Some(between) = between {
            between(&self.inner);
        }
        let made = Store::commit_schedule(&*self.inner, step).await;
        if made.is_ok() && take(&self.faults.schedule_reply_lost) {
            return Err(StoreError::outcome_unknown("injected: commit reply lost").into());
        }
        made
    }
    async fn schedules(&self) -> Result<Vec<ScheduleState>, StoreError> {
        self.admin()?;
        Store::schedules(&*self.inner).await
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

/// A queue on this store.
pub(crate) type Q = LeaseQueue<u32, SimRuntime, Faulty>;

/// A queue on a faulty memory store: visibility 10 s, 3 attempts, no backoff, no faults,
/// settles committed at once.
pub(crate) fn queue(rt: &SimRuntime) -> (Q, Arc<Faulty>) {
    queue_with(rt, Duration::ZERO)
}

/// [`queue`] whose settles each take `commit` (virtual time) to be answered.
pub(crate) fn queue_with(rt: &SimRuntime, commit: Duration) -> (Q, Arc<Faulty>) {
    let config = Config::new(Duration::from_secs(10)).with_max_attempts(3);
    let core = leaseq_async::core::Queue::new(config).expect("a valid config");
    let inner = MemoryStore::from_core(rt.clone(), core, Duration::from_secs(3), "faulty");
    let store = Arc::new(Faulty {
        inner: Arc::new(inner),
        faults: Faults::default(),
        commit,
        answered: AtomicU32::new(0),
        claims_at_once: AtomicBool::new(false),
        before_commit: Mutex::new(None),
    });
    (LeaseQueue::start(store.clone()), store)
}
