//! [`MemoryStore`] behind the [`Store`] seam: every operation one short critical section,
//! every future ready on its first poll.

use std::future::{ready, Future};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use leaseq_core::{
    Acked, CancelError, DeadLetter, Extended, Failure, ItemView, MessageId, Nacked, ReceiptError,
    RedriveError, Snoozed, Stats, Timestamp,
};

use super::{MemoryStore, MemoryTicket, MemoryWaiting, Wait};
use crate::admin_error::AdminError;
use crate::codec::CodecError;
use crate::dead_filter::DeadFilter;
use crate::error::PushError;
use crate::history::{Finished, HistoryQuery};
use crate::lease_lost::LeaseLost;
use crate::page::Page;
use crate::progress::{LeaseKey, Progress};
use crate::push::Push;
use crate::runtime::Runtime;
use crate::schedule_store::{
    ScheduleCommit, ScheduleCommitError, ScheduleCommitted, ScheduleState,
};
use crate::store::{Checkpointing, Delivery, Drive, Store, TakeHeartbeat, Taken};
use crate::store_error::SettleError;
use crate::store_error::StoreError;

impl<T: Clone + Send + 'static, R: Runtime> Store<T> for MemoryStore<T, R> {
    type Runtime = R;
    type Ticket = MemoryTicket;
    type Waiting = MemoryWaiting;

    fn runtime(&self) -> &R {
        &self.rt
    }

    fn name(&self) -> &'static str {
        self.name
    }

    fn visibility(&self) -> Duration {
        self.visibility
    }

    fn max_lease(&self) -> Option<Duration> {
        self.max_lease
    }

    fn retry_policy(&self) -> Option<leaseq_core::RetryPolicy> {
        Some(leaseq_core::RetryPolicy::new(self.lock().core.config()))
    }

    fn is_closed(&self) -> bool {
        self.closed()
    }

    fn close(&self) {
        self.close_now();
    }

    fn handle_added(&self) {
        self.add_handle();
    }

    fn handle_dropped(&self) {
        self.drop_handle();
    }

    // Inlined: a caller's `Push::new()` is then known plain at compile time.
    #[inline]
    fn try_push(&self, item: T, push: &Push) -> Result<MessageId, PushError<T>> {
        self.push_one(item, push)
    }

    fn cancel(
        &self,
        id: MessageId,
        leased: bool,
    ) -> impl Future<Output = Result<T, AdminError<CancelError>>> + Send {
        ready(self.cancel_now(id, leased).map_err(AdminError::Refused))
    }

    fn try_push_batch(
        &self,
        items: &mut dyn Iterator<Item = T>,
        push: &Push,
    ) -> Result<Vec<MessageId>, (Vec<MessageId>, PushError<T>)> {
        self.push_many(items, push)
    }

    fn poll_space(&self, waiting: &mut MemoryWaiting, cx: &mut Context<'_>) -> Poll<()> {
        self.poll_space_now(waiting, cx)
    }

    fn poll_take(
        self: &Arc<Self>,
        waiting: &mut MemoryWaiting,
        cx: &mut Context<'_>,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<Taken<T, MemoryTicket>>,
    ) -> Poll<bool> {
        self.poll_wait(waiting, Wait::Available, cx, || {
            if self.take_batch(max, heartbeat, out) > 0 {
                Some(true)
            } else {
                self.closed().then_some(false)
            }
        })
    }

    fn poll_take_into<D>(
        self: &Arc<Self>,
        waiting: &mut MemoryWaiting,
        cx: &mut Context<'_>,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<D>,
        mut shape: impl FnMut(Taken<T, MemoryTicket>) -> D,
    ) -> Poll<bool> {
        self.poll_wait(waiting, Wait::Available, cx, || {
            if self.take_batch_into(max, heartbeat, out, &mut shape) > 0 {
                Some(true)
            } else {
                self.closed().then_some(false)
            }
        })
    }

    fn spare_deliveries(&self) -> Vec<Delivery<T, R, Self>> {
        self.spare.take()
    }

    fn keep_deliveries(&self, emptied: Vec<Delivery<T, R, Self>>) {
        self.spare.keep(emptied);
    }

    fn poll_take_one(
        self: &Arc<Self>,
        waiting: &mut MemoryWaiting,
        cx: &mut Context<'_>,
        heartbeat: bool,
    ) -> Poll<Option<Taken<T, MemoryTicket>>> {
        self.poll_take_one_kind(waiting, cx, TakeHeartbeat::at_take_if(heartbeat), |t| t)
    }

    fn poll_take_one_into<D>(
        self: &Arc<Self>,
        waiting: &mut MemoryWaiting,
        cx: &mut Context<'_>,
        heartbeat: TakeHeartbeat,
        shape: impl FnOnce(Taken<T, MemoryTicket>) -> D,
    ) -> Poll<Option<D>> {
        self.poll_take_one_kind(waiting, cx, heartbeat, shape)
    }

    fn start_heartbeat(
        &self,
        ticket: &mut MemoryTicket,
        leased_at: Timestamp,
        deadline: Timestamp,
    ) {
        self.start_beat(ticket, leased_at, deadline);
    }

    fn try_take(
        self: &Arc<Self>,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<Taken<T, MemoryTicket>>,
    ) -> usize {
        self.take_batch(max, heartbeat, out)
    }

    fn poll_empty(&self, waiting: &mut MemoryWaiting, cx: &mut Context<'_>) -> Poll<()> {
        self.poll_empty_now(waiting, cx)
    }

    fn stop_waiting(&self, waiting: &mut MemoryWaiting) {
        self.unlisten(waiting);
    }

    fn ack(&self, ticket: MemoryTicket) -> impl Future<Output = Result<Acked, SettleError>> + Send {
        let now = self.rt.now();
        // The queue's copy of the item comes out of the core and is dropped here, after the
        // lock is released: an item's `Drop` never runs under it.
        let r = if self.records() {
            self.ack_recorded(ticket, now)
        } else {
            self.ack_locked(ticket, now)
        };
        ready(r.map(|(acked, _item)| acked).map_err(SettleError::Stale))
    }

    fn ack_many(
        &self,
        tickets: Vec<MemoryTicket>,
    ) -> impl Future<Output = Vec<Result<Acked, SettleError>>> + Send {
        ready(self.ack_many_now(tickets))
    }

    fn ack_deliveries_now(
        self: &Arc<Self>,
        deliveries: &mut Vec<Delivery<T, R, Self>>,
        foreign: &mut Vec<Delivery<T, R, Self>>,
        stale: &mut Vec<(MessageId, ReceiptError)>,
    ) -> Option<Vec<MessageId>> {
        // With a record, each ack is recorded one by one (`ack_many`).
        if self.records() {
            return None;
        }
        Some(self.ack_deliveries_locked(deliveries, foreign, stale))
    }

    fn nack(
        &self,
        ticket: MemoryTicket,
        failure: Failure,
    ) -> impl Future<Output = Result<Nacked, SettleError>> + Send {
        ready(
            self.hand_back_with(ticket, failure)
                .map_err(SettleError::Stale),
        )
    }

    fn dead_letter(
        &self,
        ticket: MemoryTicket,
        error: String,
    ) -> impl Future<Output = Result<u32, SettleError>> + Send {
        ready(
            self.dead_letter_now(ticket, error)
                .map_err(SettleError::Stale),
        )
    }

    fn extend(
        &self,
        ticket: &mut MemoryTicket,
        visibility: Duration,
    ) -> impl Future<Output = Result<Extended, SettleError>> + Send {
        ready(
            self.extend_now(ticket, visibility)
                .map_err(SettleError::Stale),
        )
    }

    // A pool asks for every item, and a queue nobody checkpointed on answers without the
    // lock: the check inlines, the lookup stays out of line.
    #[inline]
    fn progress(&self, ticket: &MemoryTicket) -> Option<Progress> {
        if !self.has_progress.load(Ordering::Acquire) {
            return None;
        }
        self.progress_locked(ticket)
    }

    #[inline]
    fn lease_key(&self, ticket: &MemoryTicket) -> Option<LeaseKey> {
        Some(LeaseKey::receipt(ticket.receipt))
    }

    fn checkpoint(&self, lease: LeaseKey, progress: Progress) -> Checkpointing {
        Box::pin(ready(
            self.checkpoint_key(lease, progress)
                .map_err(SettleError::Stale),
        ))
    }

    fn hand_back(&self, ticket: MemoryTicket) {
        // Stale or not, there is nothing more to do with the result here.
        let _ = self.hand_back_with(ticket, Failure::dropped());
    }

    fn put_back(&self, ticket: MemoryTicket) {
        // Stale or not (the lease ran out meanwhile), there is nothing more to do here.
        let _ = self.try_put_back(ticket);
    }

    fn settles_at_once(&self) -> bool {
        true
    }

    fn snoozes(&self) -> bool {
        true
    }

    fn snooze(
        &self,
        ticket: MemoryTicket,
        delay: Duration,
    ) -> impl Future<Output = Result<Snoozed, SettleError>> + Send {
        ready(self.snooze_now(ticket, delay).map_err(SettleError::Stale))
    }

    fn stop_heartbeat(&self, ticket: &mut MemoryTicket) {
        self.stop_beat(ticket);
    }

    fn has_heartbeat(&self, ticket: &MemoryTicket) -> bool {
        ticket.beat.is_some()
    }

    fn is_lease_lost(&self, ticket: &MemoryTicket, deadline: Timestamp) -> bool {
        self.lease_is_lost(ticket, deadline)
    }

    fn lease_lost(&self, ticket: &MemoryTicket, deadline: Timestamp) -> LeaseLost {
        self.lease_lost_of(ticket, deadline)
    }

    fn drive(&self) -> impl Future<Output = Drive> + Send {
        ready(self.drive_step())
    }

    fn listen_driver(&self) -> event_listener::EventListener {
        self.driver_wake.listen()
    }

    fn stats(&self) -> Stats {
        self.stats_now()
    }

    fn peek(&self, page: Page) -> impl Future<Output = Result<Vec<ItemView>, StoreError>> + Send {
        ready(Ok(self.peek_page(page)))
    }

    fn dead_letters(
        &self,
        page: Page,
    ) -> impl Future<Output = Result<Vec<DeadLetter<Result<T, CodecError>>>, StoreError>> + Send
    {
        let page = self.dead_letter_page(page);
        ready(Ok(page.into_iter().map(|l| l.map_item(Ok)).collect()))
    }

    fn checkpoints(
        &self,
        page: Page,
    ) -> impl Future<Output = Result<Vec<(MessageId, Progress)>, StoreError>> + Send {
        ready(Ok(self.checkpoint_page(page)))
    }

    fn redrive(
        &self,
        id: MessageId,
    ) -> impl Future<Output = Result<MessageId, AdminError<RedriveError>>> + Send {
        ready(MemoryStore::redrive(self, id).map_err(AdminError::Refused))
    }

    fn redrive_matching(
        &self,
        filter: DeadFilter<T>,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send {
        ready(Ok(MemoryStore::redrive_matching(self, &filter).len() as u64))
    }

    fn purge_dead_matching(
        &self,
        filter: DeadFilter<T>,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send {
        ready(Ok(self.take_dead_matching(&filter).len() as u64))
    }

    fn set_paused(&self, paused: bool) -> impl Future<Output = Result<bool, StoreError>> + Send {
        ready(Ok(MemoryStore::set_paused(self, paused)))
    }

    fn purge(&self) -> impl Future<Output = Result<u64, StoreError>> + Send {
        ready(Ok(MemoryStore::purge(self).len() as u64))
    }

    fn schedule(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<ScheduleState>, StoreError>> + Send {
        ready(Ok(self.schedule_state(name)))
    }

    fn commit_schedule(
        &self,
        step: ScheduleCommit<T>,
    ) -> impl Future<Output = Result<ScheduleCommitted, ScheduleCommitError<T>>> + Send {
        ready(
            self.commit_schedule_now(step)
                .map(|(committed, _)| committed),
        )
    }

    fn history(
        &self,
        query: HistoryQuery,
    ) -> impl Future<Output = Result<Vec<Finished>, StoreError>> + Send {
        ready(Ok(self.history_now(&query)))
    }

    fn schedules(&self) -> impl Future<Output = Result<Vec<ScheduleState>, StoreError>> + Send {
        ready(Ok(self.schedule_states()))
    }
}
