//! The store seam: where a queue's items live (see [`Store`]).

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use leaseq_core::{
    Acked, CancelError, DeadLetter, Extended, Failure, ItemView, MessageId, Nacked, ReceiptError,
    RedriveError, Snoozed, Stats, Timestamp,
};

use crate::{
    AdminError, CodecError, DeadFilter, Finished, HistoryQuery, LeaseKey, LeaseLost, Page,
    Progress, Push, PushError, Runtime, ScheduleCommit, ScheduleCommitError, ScheduleCommitted,
    ScheduleState, SettleError, StoreError,
};

pub use crate::taken::{Checkpointing, Drive, TakeHeartbeat, Taken};
pub use delivery::Delivery;
pub(crate) use stop_waiting::StopWaiting;

mod defaults;
mod delivery;
mod stop_waiting;

/// A queue's name unless [`QueueBuilder::name`](crate::QueueBuilder::name) sets another:
/// what [`Store::name`] answers by default.
pub(crate) const DEFAULT_NAME: &str = "leaseq";

#[doc = include_str!("seam.md")]
pub trait Store<T>: Send + Sync + Sized + 'static {
    /// The runtime the queue runs on.
    type Runtime: Runtime;
    /// A held lease, as a delivery keeps it until settled.
    type Ticket: Send + Sync + 'static;
    /// A wait in progress (for items, for space, for the queue to empty), kept by its future
    /// between polls and given back with [`stop_waiting`](Store::stop_waiting).
    type Waiting: Default + Send + Unpin + 'static;

    /// The runtime.
    fn runtime(&self) -> &Self::Runtime;
    /// The queue's name, as its traces and metrics carry it. Default: `"leaseq"`.
    fn name(&self) -> &'static str {
        DEFAULT_NAME
    }
    /// How long a lease lasts unless extended.
    fn visibility(&self) -> Duration;
    /// The longest a lease lives from its receive, extensions and heartbeats included
    /// (`Config::max_lease`), if the store caps it (see [Pools](Store#pools)). Default: `None`.
    fn max_lease(&self) -> Option<Duration> {
        None
    }
    /// The queue's retry rules (its `Config`'s max attempts, backoff and jitter), as the
    /// store applies them on every nack, fresh (see [Pools](Store#pools)). Default: `None`.
    fn retry_policy(&self) -> Option<leaseq_core::RetryPolicy> {
        None
    }

    /// Whether the queue was closed.
    fn is_closed(&self) -> bool;
    /// Closes the queue: no more pushes or receives; waiting receivers get `None`.
    fn close(&self);
    /// A new handle ([`LeaseQueue`](crate::LeaseQueue) clone or stream) exists.
    fn handle_added(&self);
    /// A handle was dropped; after the last one, the driver ends once no lease is kept
    /// alive.
    fn handle_dropped(&self);

    /// Adds an item as `push` says (delay, time to live, level, key); refuses at once
    /// (handing it back) when the queue is closed or full, the item would be born expired,
    /// its level or key is out of range, or its key is held.
    fn try_push(&self, item: T, push: &Push) -> Result<MessageId, PushError<T>>;

    /// Removes a ready or delayed item (`leased`: an item in flight too, whose holder's
    /// settle then fails with `ReceiptError::Cancelled`); hands it back.
    fn cancel(
        &self,
        id: MessageId,
        leased: bool,
    ) -> impl Future<Output = Result<T, AdminError<CancelError>>> + Send;

    /// Adds every item, in order, each as `push` says; stops at the first refusal and
    /// returns the ids accepted before it with the refusal (the refused item inside; the
    /// rest stay in `items`, untried).
    #[allow(clippy::type_complexity)]
    fn try_push_batch(
        &self,
        items: &mut dyn Iterator<Item = T>,
        push: &Push,
    ) -> Result<Vec<MessageId>, (Vec<MessageId>, PushError<T>)>;

    /// Ready once a push may find room (or the queue closed); registers the waker otherwise.
    fn poll_space(&self, waiting: &mut Self::Waiting, cx: &mut Context<'_>) -> Poll<()>;

    /// Leases up to `max` visible items into `out` (with a heartbeat each if asked). Ready
    /// with `true` once it took at least one, `false` once the queue is closed; pending
    /// otherwise, woken when items may have become visible.
    fn poll_take(
        self: &Arc<Self>,
        waiting: &mut Self::Waiting,
        cx: &mut Context<'_>,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<Taken<T, Self::Ticket>>,
    ) -> Poll<bool>;

    /// [`poll_take`](Store::poll_take) with each lease turned into a `D` by `shape` as it is
    /// taken (a batch receive's deliveries, with no vector of [`Taken`]s in between).
    /// Default: `poll_take` into a vector, then each shaped into `out` in order.
    fn poll_take_into<D>(
        self: &Arc<Self>,
        waiting: &mut Self::Waiting,
        cx: &mut Context<'_>,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<D>,
        shape: impl FnMut(Taken<T, Self::Ticket>) -> D,
    ) -> Poll<bool> {
        defaults::take_then_shape(self, waiting, cx, max, heartbeat, out, shape)
    }

    /// An empty vector for a batch receive's deliveries (see [Batches](Store#batches)).
    /// Default: a new vector.
    fn spare_deliveries(&self) -> Vec<Delivery<T, Self::Runtime, Self>> {
        Vec::new()
    }

    /// A batch ack's vector of deliveries, emptied, for a later batch receive to fill (see
    /// [Batches](Store#batches)). Default: freed.
    fn keep_deliveries(&self, emptied: Vec<Delivery<T, Self::Runtime, Self>>) {
        drop(emptied);
    }

    /// [`poll_take`](Store::poll_take) for one item, with no vector: the common receive.
    /// Ready with `None` once the queue is closed.
    fn poll_take_one(
        self: &Arc<Self>,
        waiting: &mut Self::Waiting,
        cx: &mut Context<'_>,
        heartbeat: bool,
    ) -> Poll<Option<Taken<T, Self::Ticket>>>;

    /// [`poll_take_one`](Store::poll_take_one) with the lease turned into a `D` by `shape`
    /// where it is taken (a receive's delivery, built in place rather than copied from a
    /// [`Taken`]), its heartbeat started as `heartbeat` says. Default: `poll_take_one`
    /// (with a heartbeat at the take for `AtTake` and `Later`), then `shape`.
    fn poll_take_one_into<D>(
        self: &Arc<Self>,
        waiting: &mut Self::Waiting,
        cx: &mut Context<'_>,
        heartbeat: TakeHeartbeat,
        shape: impl FnOnce(Taken<T, Self::Ticket>) -> D,
    ) -> Poll<Option<D>> {
        self.poll_take_one(waiting, cx, heartbeat != TakeHeartbeat::Off)
            .map(|taken| taken.map(shape))
    }

    /// Starts the heartbeat of a lease taken with [`TakeHeartbeat::Later`], its first beat due as
    /// if it had started when the lease was taken (`leased_at`; never after `deadline`);
    /// nothing if it started already. By default nothing (the default take started it).
    fn start_heartbeat(
        &self,
        ticket: &mut Self::Ticket,
        leased_at: Timestamp,
        deadline: Timestamp,
    ) {
        let _ = (ticket, leased_at, deadline);
    }

    /// Leases up to `max` items visible now; never waits. Returns how many.
    fn try_take(
        self: &Arc<Self>,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<Taken<T, Self::Ticket>>,
    ) -> usize;

    /// Ready once nothing is ready, delayed or in flight.
    fn poll_empty(&self, waiting: &mut Self::Waiting, cx: &mut Context<'_>) -> Poll<()>;

    /// Gives back a wait's registration (its future was dropped or finished).
    fn stop_waiting(&self, waiting: &mut Self::Waiting);

    /// Done: the item leaves the queue for good (judged on a clock reading at this call).
    /// Answers as every settle does (see [Settling](Store#settling)).
    fn ack(&self, ticket: Self::Ticket) -> impl Future<Output = Result<Acked, SettleError>> + Send;

    /// Acks several leases in one step; one result per ticket, in order.
    fn ack_many(
        &self,
        tickets: Vec<Self::Ticket>,
    ) -> impl Future<Output = Vec<Result<Acked, SettleError>>> + Send;

    /// A whole batch ack done at once, for a store whose settles are ready at once (see
    /// [Batches](Store#batches)). Default: `None`, `deliveries` untouched.
    fn ack_deliveries_now(
        self: &Arc<Self>,
        deliveries: &mut Vec<Delivery<T, Self::Runtime, Self>>,
        foreign: &mut Vec<Delivery<T, Self::Runtime, Self>>,
        stale: &mut Vec<(MessageId, ReceiptError)>,
    ) -> Option<Vec<MessageId>> {
        let _ = (deliveries, foreign, stale);
        None
    }

    /// Hands the item back with `failure`: again after the backoff, or to the dead letters.
    fn nack(
        &self,
        ticket: Self::Ticket,
        failure: Failure,
    ) -> impl Future<Output = Result<Nacked, SettleError>> + Send;

    /// Poison: straight to the dead letters with `error`; returns the attempts it had.
    fn dead_letter(
        &self,
        ticket: Self::Ticket,
        error: String,
    ) -> impl Future<Output = Result<u32, SettleError>> + Send;

    /// Moves the lease's deadline to now + `visibility` (zero releases the item); a
    /// heartbeat on the lease is brought forward to keep the new deadline.
    fn extend(
        &self,
        ticket: &mut Self::Ticket,
        visibility: Duration,
    ) -> impl Future<Output = Result<Extended, SettleError>> + Send;

    /// The key of `ticket`'s lease, for [`checkpoint`](Store::checkpoint) (`None`: this
    /// store keeps no checkpoints, the default).
    fn lease_key(&self, ticket: &Self::Ticket) -> Option<LeaseKey> {
        let _ = ticket;
        None
    }

    /// Records `progress` as the item's checkpoint while the lease of `lease`
    /// ([`lease_key`](Store::lease_key)) runs, answered as a settle (see
    /// [Checkpoints](Store#checkpoints)). Default: refused, not done.
    fn checkpoint(&self, lease: LeaseKey, progress: Progress) -> Checkpointing {
        defaults::no_checkpoints(lease, progress)
    }

    /// The item's last checkpoint as the store knows it for `ticket`'s lease (see
    /// [Checkpoints](Store#checkpoints)). Default: none.
    fn progress(&self, ticket: &Self::Ticket) -> Option<Progress> {
        let _ = ticket;
        None
    }

    /// `progress` was recorded on `ticket`'s lease ([`checkpoint`](Store::checkpoint)
    /// answered `Ok`): for a store whose [`progress`](Store::progress) reads the ticket.
    /// Default: nothing.
    fn recorded(&self, ticket: &mut Self::Ticket, progress: Progress) {
        let _ = (ticket, progress);
    }

    /// The holder let go without settling (a dropped delivery): the item goes back with
    /// reason "dropped", the attempt counted. Synchronous: called from `Drop`.
    fn hand_back(&self, ticket: Self::Ticket);

    /// A lease taken ahead (a pool's prefetch) that was never started goes back uncounted:
    /// its attempt not counted, the item visible at once. Synchronous: called from `Drop`
    /// and at shutdown. Default: [`hand_back`](Store::hand_back), which counts the attempt.
    fn put_back(&self, ticket: Self::Ticket) {
        self.hand_back(ticket)
    }

    /// Whether this store snoozes (see [Snoozing](Store#snoozing)). Default `false`.
    fn snoozes(&self) -> bool {
        false
    }

    /// Puts the item back for `delay` without counting the attempt (see
    /// [Snoozing](Store#snoozing)). Default: a counted retry after `delay`.
    fn snooze(
        &self,
        ticket: Self::Ticket,
        delay: Duration,
    ) -> impl Future<Output = Result<Snoozed, SettleError>> + Send {
        defaults::snooze_as_retry(self, ticket, delay)
    }

    /// Whether every settle's future is ready on its first poll (see
    /// [Settling](Store#settling)). Default `false`.
    fn settles_at_once(&self) -> bool {
        false
    }

    /// Whether the last take came back short because a concurrency limit held items back
    /// (the limit's leases all in flight, some held by other processes): a pool's fetcher
    /// then leases ahead less, and asks again as soon as it is short, so that the leases
    /// under the limit are those being worked on (see [Pools](Store#pools)). Read once per
    /// take by a fetcher, never by a plain receive. Default `false` (no limits).
    fn limit_binds(&self) -> bool {
        false
    }

    /// Stops the lease's heartbeat, if it has one; the lease then runs out at its deadline.
    fn stop_heartbeat(&self, ticket: &mut Self::Ticket);

    /// Whether the lease has a heartbeat.
    fn has_heartbeat(&self, ticket: &Self::Ticket) -> bool;

    /// Whether the lease is known to be lost (with a heartbeat: an extension refused or the
    /// max lease reached; without: `deadline` passed).
    fn is_lease_lost(&self, ticket: &Self::Ticket, deadline: Timestamp) -> bool;

    /// Completes when the lease is lost (see [`is_lease_lost`](Store::is_lease_lost)).
    fn lease_lost(&self, ticket: &Self::Ticket, deadline: Timestamp) -> LeaseLost;

    /// One step of the queue's driver: applies what is due at the current time (leases
    /// running out, delays ending, heartbeats) and wakes whoever waits on what changed.
    fn drive(&self) -> impl Future<Output = Drive> + Send;

    /// A listener woken when the driver must run before its alarm.
    fn listen_driver(&self) -> event_listener::EventListener;

    /// The queue's gauges and totals (exact for the memory store; for a store shared by
    /// several processes, as of its last refresh).
    fn stats(&self) -> Stats;

    /// The queue's stats counted afresh (for a store shared by several processes: its rows
    /// counted now). Default: [`stats`](Store::stats).
    fn refresh_stats(&self) -> impl Future<Output = Result<Stats, StoreError>> + Send {
        std::future::ready(Ok(self.stats()))
    }

    /// Pauses (`true`) or resumes (`false`) the queue for every handle and, on a shared
    /// store, every process: while paused no lease is handed out (a claim already under
    /// way is the last), pushes are accepted and the leases out can still be settled.
    /// Answers whether the flag changed, once the change is durable. A receiver waiting
    /// while paused is woken by the resume, not before.
    fn set_paused(&self, paused: bool) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// The live items (ready, delayed, in flight) of `page`, in id order, each with its
    /// state, attempts and, in flight, its lease deadline.
    fn peek(&self, page: Page) -> impl Future<Output = Result<Vec<ItemView>, StoreError>> + Send;

    /// The dead letters of `page`, in id order; an item whose stored bytes do not decode
    /// shows as its [`CodecError`].
    #[allow(clippy::type_complexity)]
    fn dead_letters(
        &self,
        page: Page,
    ) -> impl Future<Output = Result<Vec<DeadLetter<Result<T, CodecError>>>, StoreError>> + Send;

    /// Puts a dead letter back, visible at once, attempts reset (refused as the core's
    /// `Queue::redrive` says).
    fn redrive(
        &self,
        id: MessageId,
    ) -> impl Future<Output = Result<MessageId, AdminError<RedriveError>>> + Send;

    /// The checkpoints of the live items and dead letters of `page` that have one, in id
    /// order. Default: none (a store that keeps no checkpoints).
    fn checkpoints(
        &self,
        page: Page,
    ) -> impl Future<Output = Result<Vec<(MessageId, Progress)>, StoreError>> + Send {
        let _ = page;
        std::future::ready(Ok(Vec::new()))
    }

    /// The record of finished jobs that `query` asks for, oldest first (see
    /// [`Finished`]). Default: none (a store that keeps no record). The memory store keeps
    /// one with [`QueueBuilder::retention`](crate::QueueBuilder::retention), SQLite and
    /// Postgres with their `Options::retention`.
    fn history(
        &self,
        query: HistoryQuery,
    ) -> impl Future<Output = Result<Vec<Finished>, StoreError>> + Send {
        let _ = query;
        std::future::ready(Ok(Vec::new()))
    }

    /// Redrives every dead letter `filter` takes that can go back, in id order; how many
    /// went (expired ones and those whose key a live item holds stay; it stops at
    /// capacity). A reason filter is applied where the dead letters are (in SQL for a
    /// database); a kind filter as [`DeadFilter`] says.
    fn redrive_matching(
        &self,
        filter: DeadFilter<T>,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Deletes every dead letter `filter` takes; how many.
    fn purge_dead_matching(
        &self,
        filter: DeadFilter<T>,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Deletes every ready and delayed item (items in flight stay with their holders);
    /// how many.
    fn purge(&self) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// The stored state of schedule `name`, as the last committed step left it (`None`: no
    /// step of it was ever committed): where a [`Scheduler`](crate::Scheduler) plans from.
    fn schedule(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<ScheduleState>, StoreError>> + Send;

    /// Commits one scheduler step as one change, if the stored cursor of schedule
    /// `step.state.name` is `step.expected` (see [Schedules](Store#schedules)).
    fn commit_schedule(
        &self,
        step: ScheduleCommit<T>,
    ) -> impl Future<Output = Result<ScheduleCommitted, ScheduleCommitError<T>>> + Send;

    /// Every schedule kept for this queue, by name.
    fn schedules(&self) -> impl Future<Output = Result<Vec<ScheduleState>, StoreError>> + Send;

    /// Completes once every change made so far (pushes included) is durable (see
    /// [Durable pushes](Store#durable-pushes)). Default: ready at once with `Ok`.
    fn synced(&self) -> impl Future<Output = Result<(), StoreError>> + Send {
        std::future::ready(Ok(()))
    }
}
