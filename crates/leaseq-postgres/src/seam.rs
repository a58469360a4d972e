//! `impl Store for PgStore`: the shared layer's operations on the database. Pushes and
//! acks are queued for the writer and the settler (group commit); receives wait on the
//! claim board; nacks, dead letters and extensions run one fenced statement each.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use event_listener::EventListener;
use leaseq_async::{
    AdminError, Checkpointing, CodecError, DeadFilter, Drive, LeaseKey, LeaseLost, Page, Progress,
    Push, PushError, Runtime, ScheduleCommit, ScheduleCommitError, ScheduleCommitted,
    ScheduleState, SettleError, Store, StoreError, Taken,
};
use leaseq_core::{
    Acked, CancelError, DeadLetter, Extended, Failure, ItemView, MessageId, Nacked, RedriveError,
    Snoozed, Stats,
};
use leaseq_tokio::TokioRuntime;

use crate::receive::PgWaiting;
use crate::settle;
use crate::settles::AckOp;
use crate::store::PgStore;
use crate::ticket::PgTicket;

impl<T: Clone + Send + Sync + 'static> Store<T> for PgStore<T> {
    type Runtime = TokioRuntime;
    type Ticket = PgTicket;
    type Waiting = PgWaiting<T>;

    fn runtime(&self) -> &TokioRuntime {
        &self.db.rt
    }

    fn name(&self) -> &'static str {
        self.name
    }

    fn visibility(&self) -> Duration {
        self.db.config.visibility()
    }

    fn max_lease(&self) -> Option<Duration> {
        self.db.config.max_lease()
    }

    fn limit_binds(&self) -> bool {
        self.db
            .limit_binds
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn retry_policy(&self) -> Option<leaseq_core::RetryPolicy> {
        Some(leaseq_core::RetryPolicy::new(&self.db.config))
    }

    fn is_closed(&self) -> bool {
        self.life.is_closed()
    }

    fn close(&self) {
        if self.life.close() {
            for slot in self.board.slots.lock().waiting.drain(..) {
                if let Some(w) = slot.state.lock().waker.take() {
                    w.wake();
                }
            }
            self.put_back_prefetched();
            self.wake_all();
        }
    }

    fn handle_added(&self) {
        self.handles.fetch_add(1, Ordering::Relaxed);
    }

    fn handle_dropped(&self) {
        if self.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.driver.wake.notify(usize::MAX);
        }
    }

    fn try_push(&self, item: T, push: &Push) -> Result<MessageId, PushError<T>> {
        self.push_row(item, push)
    }

    fn cancel(
        &self,
        id: MessageId,
        leased: bool,
    ) -> impl Future<Output = Result<T, AdminError<CancelError>>> + Send {
        self.cancel_row(id, leased)
    }

    fn try_push_batch(
        &self,
        items: &mut dyn Iterator<Item = T>,
        push: &Push,
    ) -> Result<Vec<MessageId>, (Vec<MessageId>, PushError<T>)> {
        self.push_many(items, push)
    }

    fn poll_space(&self, waiting: &mut PgWaiting<T>, cx: &mut Context<'_>) -> Poll<()> {
        self.poll_room(waiting, cx)
    }

    fn poll_take(
        self: &Arc<Self>,
        waiting: &mut PgWaiting<T>,
        cx: &mut Context<'_>,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<Taken<T, PgTicket>>,
    ) -> Poll<bool> {
        self.poll_claim(waiting, cx, max, heartbeat, out)
    }

    fn poll_take_one(
        self: &Arc<Self>,
        waiting: &mut PgWaiting<T>,
        cx: &mut Context<'_>,
        heartbeat: bool,
    ) -> Poll<Option<Taken<T, PgTicket>>> {
        let mut out = Vec::with_capacity(1);
        self.poll_claim(waiting, cx, 1, heartbeat, &mut out)
            .map(|open| if open { out.pop() } else { None })
    }

    fn try_take(
        self: &Arc<Self>,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<Taken<T, PgTicket>>,
    ) -> usize {
        self.take_blocking(max, heartbeat, out)
    }

    fn poll_empty(&self, waiting: &mut PgWaiting<T>, cx: &mut Context<'_>) -> Poll<()> {
        self.poll_drained(waiting, cx)
    }

    fn stop_waiting(&self, waiting: &mut PgWaiting<T>) {
        self.stop(waiting)
    }

    fn ack(&self, ticket: PgTicket) -> impl Future<Output = Result<Acked, SettleError>> + Send {
        let rx = self.queue_ack(ticket);
        async move {
            self.settler.flush_here().await;
            settled(rx.await)
        }
    }

    fn ack_many(
        &self,
        tickets: Vec<PgTicket>,
    ) -> impl Future<Output = Vec<Result<Acked, SettleError>>> + Send {
        let rxs: Vec<_> = tickets.into_iter().map(|t| self.queue_ack(t)).collect();
        async move {
            self.settler.flush_here().await;
            let mut out = Vec::with_capacity(rxs.len());
            for rx in rxs {
                out.push(settled(rx.await));
            }
            out
        }
    }

    async fn nack(&self, ticket: PgTicket, failure: Failure) -> Result<Nacked, SettleError> {
        let client = match self.db.client().await {
            Ok(c) => c,
            Err(e) => {
                // Nothing was sent: the nack was not made.
                let error = StoreError::not_done(format!(
                    "nack: no connection: {}",
                    leaseq_async::ErrorChain(&e)
                ));
                self.db.failed("nack", e);
                self.leases.forget(&ticket);
                return Err(error.into());
            }
        };
        settle::fail(self.settler.parts(), &client, ticket, failure).await
    }

    async fn dead_letter(&self, ticket: PgTicket, error: String) -> Result<u32, SettleError> {
        let client = match self.db.client().await {
            Ok(c) => c,
            Err(e) => {
                // Nothing was sent: the dead-letter was not made.
                let error = StoreError::not_done(format!(
                    "dead letter: no connection: {}",
                    leaseq_async::ErrorChain(&e)
                ));
                self.db.failed("dead letter", e);
                self.leases.forget(&ticket);
                return Err(error.into());
            }
        };
        settle::terminate(self.settler.parts(), &client, ticket, error).await
    }

    fn extend(
        &self,
        ticket: &mut PgTicket,
        visibility: Duration,
    ) -> impl Future<Output = Result<Extended, SettleError>> + Send {
        self.extend_lease(ticket, visibility)
    }

    fn progress(&self, ticket: &PgTicket) -> Option<Progress> {
        ticket.progress.clone()
    }

    fn recorded(&self, ticket: &mut PgTicket, progress: Progress) {
        ticket.progress = Some(progress);
    }

    fn lease_key(&self, ticket: &PgTicket) -> Option<LeaseKey> {
        Some(LeaseKey::row(ticket.id, ticket.lease))
    }

    fn checkpoint(&self, lease: LeaseKey, progress: Progress) -> Checkpointing {
        self.checkpoint_lease(lease, progress)
    }

    fn hand_back(&self, ticket: PgTicket) {
        self.leases.forget(&ticket);
        self.settles.queue.lock().hand_backs.push(ticket);
        self.settles.wake.notify(1);
    }

    /// Queued for the settler with the leases its own prefetch puts back: one statement
    /// makes the row waiting again, its attempt not counted, if the lease is still this
    /// one (counted in `put_back`). It keeps its `visible_at`, so it is visible at once and
    /// first in line again (the memory store puts it behind the items ready now).
    fn put_back(&self, ticket: PgTicket) {
        self.leases.forget(&ticket);
        self.settles
            .queue
            .lock()
            .put_backs
            .push((ticket.id, ticket.lease));
        self.settles.wake.notify(1);
    }

    fn snoozes(&self) -> bool {
        true
    }

    async fn snooze(&self, ticket: PgTicket, delay: Duration) -> Result<Snoozed, SettleError> {
        self.snooze_lease(ticket, delay).await
    }

    fn stop_heartbeat(&self, ticket: &mut PgTicket) {
        self.leases.forget(ticket);
        ticket.beat = None;
    }

    fn has_heartbeat(&self, ticket: &PgTicket) -> bool {
        ticket.beat.is_some()
    }

    fn is_lease_lost(&self, ticket: &PgTicket, deadline: leaseq_core::Timestamp) -> bool {
        match &ticket.beat {
            Some(signal) => signal.is_lost(),
            None => self.db.rt.now() >= deadline,
        }
    }

    fn lease_lost(&self, ticket: &PgTicket, deadline: leaseq_core::Timestamp) -> LeaseLost {
        match &ticket.beat {
            Some(signal) => LeaseLost::from_signal(signal.clone()),
            None => LeaseLost::at_deadline(&self.db.rt, deadline),
        }
    }

    fn drive(&self) -> impl Future<Output = Drive> + Send {
        self.keeper.drive(&self.handles)
    }

    fn listen_driver(&self) -> EventListener {
        self.driver.wake.listen()
    }

    fn stats(&self) -> Stats {
        self.driver.stats_wanted.store(true, Ordering::Relaxed);
        self.counters.stats()
    }

    fn refresh_stats(&self) -> impl Future<Output = Result<Stats, StoreError>> + Send {
        self.refresh()
    }

    fn set_paused(&self, paused: bool) -> impl Future<Output = Result<bool, StoreError>> + Send {
        self.set_paused_in_db(paused)
    }

    fn peek(&self, page: Page) -> impl Future<Output = Result<Vec<ItemView>, StoreError>> + Send {
        self.peek_page(page)
    }

    fn dead_letters(
        &self,
        page: Page,
    ) -> impl Future<Output = Result<Vec<DeadLetter<Result<T, CodecError>>>, StoreError>> + Send
    {
        self.dead_page(page)
    }

    fn checkpoints(
        &self,
        page: Page,
    ) -> impl Future<Output = Result<Vec<(MessageId, Progress)>, StoreError>> + Send {
        self.checkpoint_page(page)
    }

    fn redrive(
        &self,
        id: MessageId,
    ) -> impl Future<Output = Result<MessageId, AdminError<RedriveError>>> + Send {
        self.redrive_one(id)
    }

    async fn redrive_matching(&self, filter: DeadFilter<T>) -> Result<u64, StoreError> {
        self.redrive_every(&filter).await
    }

    async fn purge_dead_matching(&self, filter: DeadFilter<T>) -> Result<u64, StoreError> {
        self.purge_dead(&filter).await
    }

    fn purge(&self) -> impl Future<Output = Result<u64, StoreError>> + Send {
        self.purge_waiting()
    }

    /// The pushes queued so far committed; once the queue is closed (what its `Closing`
    /// awaits), the leases given back so far too (a stopped pool's put-backs, a consumer's
    /// prefetch), so that the next process finds them waiting, their attempts not counted.
    fn synced(&self) -> impl Future<Output = Result<(), StoreError>> + Send {
        let seq = self.pushes.buf.lock().queued;
        let closed = self.life.is_closed();
        async move {
            self.committed(seq).await?;
            if closed {
                self.settler.drained().await?;
            }
            Ok(())
        }
    }

    async fn schedule(&self, name: &str) -> Result<Option<ScheduleState>, StoreError> {
        self.schedule_state(name).await
    }

    async fn commit_schedule(
        &self,
        step: ScheduleCommit<T>,
    ) -> Result<ScheduleCommitted, ScheduleCommitError<T>> {
        self.commit_schedule_step(step).await
    }

    async fn schedules(&self) -> Result<Vec<ScheduleState>, StoreError> {
        self.schedule_states().await
    }

    async fn history(
        &self,
        query: leaseq_async::HistoryQuery,
    ) -> Result<Vec<leaseq_async::Finished>, StoreError> {
        PgStore::history(self, &query)
            .await
            .map_err(|e| StoreError::not_done(format!("history: {}", leaseq_async::ErrorChain(&e))))
    }
}

/// An ack's answer from the settler; a settler gone before answering leaves the ack's
/// outcome unknown.
fn settled(
    reply: Result<Result<Acked, SettleError>, tokio::sync::oneshot::error::RecvError>,
) -> Result<Acked, SettleError> {
    match reply {
        Ok(r) => r,
        Err(_) => {
            Err(StoreError::outcome_unknown("ack: the settler ended before answering").into())
        }
    }
}

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    /// Queues an ack for the settler; the receiver gets its result.
    fn queue_ack(
        &self,
        ticket: PgTicket,
    ) -> tokio::sync::oneshot::Receiver<Result<Acked, SettleError>> {
        self.leases.forget(&ticket);
        let (reply, rx) = tokio::sync::oneshot::channel();
        self.settles.queue.lock().acks.push(AckOp {
            id: ticket.id,
            lease: ticket.lease,
            plain: ticket.plain,
            resent: false,
            since: std::time::Instant::now(),
            reply,
        });
        rx
    }
}
