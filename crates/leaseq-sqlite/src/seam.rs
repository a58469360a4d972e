//! `impl Store for SqliteStore`: every operation runs on the memory store, and what it
//! changed durably is journaled; settling futures (and `synced`) complete once their change
//! is committed, or fail with an "outcome unknown" `StoreError` once commits have failed
//! for the commit timeout. Pushes are refused ("not done") while commits fail.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use event_listener::EventListener;
use leaseq_async::{
    AdminError, Checkpointing, Codec, CodecError, DeadFilter, Drive, Finished, HistoryQuery,
    LeaseKey, LeaseLost, Page, Progress, Push, PushError, Runtime, ScheduleCommit,
    ScheduleCommitError, ScheduleCommitted, ScheduleState, SettleError, Store, StoreError, Taken,
};
use leaseq_core::{
    Acked, CancelError, DeadLetter, Extended, Failure, ItemView, MessageId, Nacked, RedriveError,
    Stats, Timestamp,
};

use crate::op::Op;
use crate::receive::SqliteWaiting;
use crate::store::{ready_now, SqliteStore, SqliteTicket};

impl<T: Clone + Send + 'static, R: Runtime, C: Codec<T>> Store<T> for SqliteStore<T, R, C> {
    type Runtime = R;
    type Ticket = SqliteTicket;
    type Waiting = SqliteWaiting<T>;

    fn runtime(&self) -> &R {
        self.inner.runtime()
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn visibility(&self) -> Duration {
        self.inner.visibility()
    }

    fn max_lease(&self) -> Option<Duration> {
        self.inner.max_lease()
    }

    fn retry_policy(&self) -> Option<leaseq_core::RetryPolicy> {
        self.inner.retry_policy()
    }

    fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    fn close(&self) {
        self.inner.close();
        // Receivers waiting out a commit failure see the close.
        self.journal.wake_waiters();
    }

    fn handle_added(&self) {
        self.handles.fetch_add(1, Ordering::Relaxed);
        self.inner.handle_added()
    }

    /// The last handle's drop is a bounded flush: it blocks until everything accepted so
    /// far is committed and the WAL checkpointed (at most the commit timeout while commits
    /// fail), so a program that drops its queue and returns from `main` keeps its
    /// fire-and-forget pushes, whichever thread ends up dropping the store.
    fn handle_dropped(&self) {
        self.inner.handle_dropped();
        if self.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.journal.last_handle_gone();
        }
    }

    fn try_push(&self, item: T, push: &Push) -> Result<MessageId, PushError<T>> {
        self.push_journaled(item, push)
    }

    fn cancel(
        &self,
        id: MessageId,
        leased: bool,
    ) -> impl Future<Output = Result<T, AdminError<CancelError>>> + Send {
        self.cancel_journaled(id, leased)
    }

    fn try_push_batch(
        &self,
        items: &mut dyn Iterator<Item = T>,
        push: &Push,
    ) -> Result<Vec<MessageId>, (Vec<MessageId>, PushError<T>)> {
        self.push_each(items, push)
    }

    fn poll_space(&self, waiting: &mut SqliteWaiting<T>, cx: &mut Context<'_>) -> Poll<()> {
        self.inner.poll_space(&mut waiting.inner, cx)
    }

    fn poll_take(
        self: &Arc<Self>,
        waiting: &mut SqliteWaiting<T>,
        cx: &mut Context<'_>,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<Taken<T, SqliteTicket>>,
    ) -> Poll<bool> {
        let taken = self.poll_held(waiting, cx, |w, cx| {
            let mut got = Vec::new();
            self.inner
                .poll_take(w, cx, max, heartbeat, &mut got)
                .map(|open| open.then_some(got))
        });
        taken.map(|held| held.map(|held| out.extend(held)).is_some())
    }

    fn poll_take_one(
        self: &Arc<Self>,
        waiting: &mut SqliteWaiting<T>,
        cx: &mut Context<'_>,
        heartbeat: bool,
    ) -> Poll<Option<Taken<T, SqliteTicket>>> {
        let taken = self.poll_held(waiting, cx, |w, cx| {
            self.inner
                .poll_take_one(w, cx, heartbeat)
                .map(|t| t.map(|t| vec![t]))
        });
        taken.map(|held| held.and_then(|mut held| held.pop()))
    }

    fn try_take(
        self: &Arc<Self>,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<Taken<T, SqliteTicket>>,
    ) -> usize {
        self.take_now(max, heartbeat, out)
    }

    fn poll_empty(&self, waiting: &mut SqliteWaiting<T>, cx: &mut Context<'_>) -> Poll<()> {
        self.inner.poll_empty(&mut waiting.inner, cx)
    }

    fn stop_waiting(&self, waiting: &mut SqliteWaiting<T>) {
        self.stop(waiting)
    }

    fn ack(&self, ticket: SqliteTicket) -> impl Future<Output = Result<Acked, SettleError>> + Send {
        self.ack_journaled(ticket)
    }

    fn ack_many(
        &self,
        tickets: Vec<SqliteTicket>,
    ) -> impl Future<Output = Vec<Result<Acked, SettleError>>> + Send {
        self.delete_acked_many(tickets)
    }

    fn nack(
        &self,
        ticket: SqliteTicket,
        failure: Failure,
    ) -> impl Future<Output = Result<Nacked, SettleError>> + Send {
        self.nack_journaled(ticket, failure)
    }

    fn dead_letter(
        &self,
        ticket: SqliteTicket,
        error: String,
    ) -> impl Future<Output = Result<u32, SettleError>> + Send {
        self.dead_letter_journaled(ticket, error)
    }

    fn extend(
        &self,
        ticket: &mut SqliteTicket,
        visibility: Duration,
    ) -> impl Future<Output = Result<Extended, SettleError>> + Send {
        // Leases are not durable: an extension changes nothing on disk, unless it released
        // the item.
        let id = ticket.id;
        let r = ready_now(self.inner.extend(&mut ticket.inner, visibility));
        let seq = match &r {
            Ok(Extended::Released(n)) => Some(self.journal_nacked(id, n, None)),
            _ => None,
        };
        self.settled(seq, r)
    }

    fn progress(&self, ticket: &SqliteTicket) -> Option<Progress> {
        self.inner.progress(&ticket.inner)
    }

    fn lease_key(&self, ticket: &SqliteTicket) -> Option<LeaseKey> {
        self.inner.lease_key(&ticket.inner)
    }

    fn checkpoint(&self, lease: LeaseKey, progress: Progress) -> Checkpointing {
        self.record_checkpoint(lease, progress)
    }

    fn hand_back(&self, ticket: SqliteTicket) {
        let id = ticket.id;
        if let Ok(n) = ready_now(self.inner.nack(ticket.inner, Failure::dropped())) {
            self.journal_nacked(id, &n, None);
        }
    }

    fn put_back(&self, ticket: SqliteTicket) {
        let (id, attempt) = (ticket.id, ticket.attempt);
        // The attempt journaled when the lease was taken is taken back, ahead of the count
        // of whoever takes the item next.
        self.journal.submit_with(|| {
            self.inner.try_put_back(ticket.inner).ok()?;
            Some(Op::PutBack {
                id: id.get(),
                attempts: attempt.saturating_sub(1),
            })
        });
    }

    fn settles_at_once(&self) -> bool {
        false
    }

    fn snoozes(&self) -> bool {
        true
    }

    fn snooze(
        &self,
        ticket: SqliteTicket,
        delay: Duration,
    ) -> impl Future<Output = Result<leaseq_core::Snoozed, SettleError>> + Send {
        self.snooze_journaled(ticket, delay)
    }

    fn stop_heartbeat(&self, ticket: &mut SqliteTicket) {
        self.inner.stop_heartbeat(&mut ticket.inner)
    }

    fn has_heartbeat(&self, ticket: &SqliteTicket) -> bool {
        self.inner.has_heartbeat(&ticket.inner)
    }

    fn is_lease_lost(&self, ticket: &SqliteTicket, deadline: Timestamp) -> bool {
        self.inner.is_lease_lost(&ticket.inner, deadline)
    }

    fn lease_lost(&self, ticket: &SqliteTicket, deadline: Timestamp) -> LeaseLost {
        self.inner.lease_lost(&ticket.inner, deadline)
    }

    fn drive(&self) -> impl Future<Output = Drive> + Send {
        // Dead letters the time step made (leases or items that ran out), with what they
        // did to the graph when it is in use (made and queued under the journal's lock).
        let mut drive = if self.graph_on.load(Ordering::Relaxed) {
            let step = || {
                (
                    ready_now(self.inner.drive()),
                    self.with_graph(self.event_ops()),
                )
            };
            self.journal.submit_all_with(step).0
        } else {
            let drive = ready_now(self.inner.drive());
            self.journal_events();
            drive
        };
        // The record's entries past their window.
        let now = self.inner.runtime().now();
        drive.next = drive.next.min(self.prune_due(now));
        std::future::ready(drive)
    }

    fn listen_driver(&self) -> EventListener {
        self.inner.listen_driver()
    }

    fn stats(&self) -> Stats {
        self.inner.stats()
    }

    fn history(
        &self,
        query: HistoryQuery,
    ) -> impl Future<Output = Result<Vec<Finished>, StoreError>> + Send {
        // On a connection of its own, as `FileView::history` reads it: what the last
        // commit holds (every finish answered before this call is there).
        let read = crate::inspect::FileView::open(&self.path).and_then(|v| v.history(&query));
        std::future::ready(
            read.map_err(|e| StoreError::not_done(format!("cannot read the record: {e}"))),
        )
    }

    fn peek(&self, page: Page) -> impl Future<Output = Result<Vec<ItemView>, StoreError>> + Send {
        std::future::ready(Ok(self.inner.peek_page(page)))
    }

    fn dead_letters(
        &self,
        page: Page,
    ) -> impl Future<Output = Result<Vec<DeadLetter<Result<T, CodecError>>>, StoreError>> + Send
    {
        // The memory store holds every item decoded (an undecodable row refuses the open).
        let page = self.inner.dead_letter_page(page);
        std::future::ready(Ok(page.into_iter().map(|l| l.map_item(Ok)).collect()))
    }

    fn checkpoints(
        &self,
        page: Page,
    ) -> impl Future<Output = Result<Vec<(MessageId, Progress)>, StoreError>> + Send {
        std::future::ready(Ok(self.inner.checkpoint_page(page)))
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
        Ok(self.take_dead_matching(&filter).await?.len() as u64)
    }

    async fn set_paused(&self, paused: bool) -> Result<bool, StoreError> {
        self.set_paused_durably(paused).await
    }

    fn purge(&self) -> impl Future<Output = Result<u64, StoreError>> + Send {
        self.purge_items()
    }

    async fn schedule(&self, name: &str) -> Result<Option<ScheduleState>, StoreError> {
        Ok(self.inner.schedule_state(name))
    }

    async fn commit_schedule(
        &self,
        step: ScheduleCommit<T>,
    ) -> Result<ScheduleCommitted, ScheduleCommitError<T>> {
        self.commit_schedule_step(step).await
    }

    async fn schedules(&self) -> Result<Vec<ScheduleState>, StoreError> {
        Ok(self.inner.schedule_states())
    }

    /// Once the queue is closed (so `close().await`), also checkpoints the WAL into the
    /// file and truncates it after the last commit.
    fn synced(&self) -> impl Future<Output = Result<(), StoreError>> + Send {
        let seq = self.journal.last();
        let closed = self.inner.is_closed();
        async move {
            if closed {
                self.journal.checkpoint().await
            } else {
                self.journal.committed(seq).await
            }
        }
    }
}
