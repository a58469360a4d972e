//! The store seam: where a queue's items live (see [`Store`]).

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use leaseq_core::{
    Acked, CancelError, DeadLetter, Extended, Failure, ItemView, MessageId, Nacked, ReceiptError,
    RedriveError, Snoozed, Stats, Timestamp,
};

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
use crate::store_error::{SettleError, StoreError};

pub use crate::taken::{Checkpointing, Drive, TakeHeartbeat, Taken};
pub use delivery::Delivery;

mod delivery;

/// A queue's name unless [`QueueBuilder::name`](crate::QueueBuilder::name) sets another:
/// what [`Store::name`] answers by default.
pub(crate) const DEFAULT_NAME: &str = "leaseq";

/// The store seam: where a queue's items live, and the operations the shared layer needs
/// of it.
///
/// [`LeaseQueue`](crate::LeaseQueue), [`Delivery`](crate::Delivery), the heartbeat, the
/// driver, [`Pool`](crate::Pool) and the watchdog are written once against this trait. A store
/// keeps the items and their leases and answers for them; everything above it (cancel-safe
/// receives, deliveries that go back when dropped, item timeouts, panics caught, stats for the
/// diagnosis) is shared.
///
/// Three stores implement it: [`MemoryStore`](crate::MemoryStore) (the `no_std` core behind
/// one lock: this crate), `SqliteStore` (leaseq-sqlite: a durable store on one machine) and
/// `PgStore` (leaseq-postgres: one queue for many processes). The trait is shaped by what the
/// durable ones need:
///
/// - **Settling is async** ([`ack`](Store::ack), [`nack`](Store::nack), ...): a durable store
///   answers once the change is committed, and a shared one needs a round trip to check the
///   lease's fencing token. The memory store answers at once: its futures are ready on
///   their first poll, so the seam costs it nothing (static dispatch, no allocation).
/// - **Failure is typed** ([`SettleError`], [`StoreError`]): `Ok` means durable; a store that
///   failed says "not done" or "outcome unknown", never a wrong definite answer.
/// - **Receiving is a poll** ([`poll_take`](Store::poll_take)) so the receive future stays
///   cancel-safe whatever the store: the memory store takes items only in the poll that
///   returns them; a database store keeps its claim in [`Store::Waiting`] and hands back what
///   a dropped receive had claimed.
/// - **A held lease is a [`Store::Ticket`]**: the core's receipt for the memory store, a row
///   and a fencing token for a database.
/// - **Dropping a delivery is synchronous** ([`hand_back`](Store::hand_back)): a durable store
///   queues the change and commits it with its next batch.
/// - **Introspection is a snapshot** ([`stats`](Store::stats)): exact for the memory store, as
///   of the last refresh for a shared one.
/// - **Schedules** ([`schedule`](Store::schedule), [`commit_schedule`](Store::commit_schedule)):
///   a schedule's state is kept with the items, and a scheduler step (its ticks' pushes,
///   the stale ticks taken back, the cursor's move) is one commit, refused if the cursor
///   moved since it was read: a compare-and-set every process sharing the store sees.
/// - **The driver** ([`drive`](Store::drive)) applies what is due (leases running out,
///   delays ending, heartbeats) and says when to wake next; a database store also rescues
///   leases of dead processes there.
///
/// Every method is called without any
/// lock of the caller held; none calls back into user code while it holds a lock of its own,
/// but for the item's `Clone` in the in-memory store (and the stores built on it): see
/// `MemoryStore::lock`.
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
    /// (`Config::max_lease`), if the store caps it. Default: `None` (no cap known). A pool
    /// built without an item timeout uses it as its default limit (see
    /// [`PoolBuilder::item_timeout`](crate::PoolBuilder::item_timeout)).
    fn max_lease(&self) -> Option<Duration> {
        None
    }
    /// The queue's retry rules (its `Config`'s max attempts, backoff and jitter), as the
    /// store applies them on every nack, fresh (its jitter's PRNG from the seed). A pool
    /// with retry rules per job kind applies them through it (see
    /// [`PoolBuilder::kind_policy`](crate::PoolBuilder::kind_policy)); called once, when the
    /// pool starts. Default: `None` (no rules known: such a pool then applies only the
    /// kinds' item timeouts).
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
        let mut taken = Vec::new();
        let r = self.poll_take(waiting, cx, max, heartbeat, &mut taken);
        out.extend(taken.into_iter().map(shape));
        r
    }

    /// An empty vector for a batch receive's deliveries, with the room of one that
    /// [`keep_deliveries`](Store::keep_deliveries) gave back if the store keeps one.
    /// Default: a new vector.
    fn spare_deliveries(&self) -> Vec<Delivery<T, Self::Runtime, Self>> {
        Vec::new()
    }

    /// A batch ack's vector of deliveries, emptied, for a later batch receive to fill
    /// ([`spare_deliveries`](Store::spare_deliveries)). Default: freed.
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
    ///
    /// Every settle ([`ack`](Store::ack), [`ack_many`](Store::ack_many),
    /// [`nack`](Store::nack), [`dead_letter`](Store::dead_letter), [`extend`](Store::extend))
    /// answers `Ok` only once its change is durable, [`SettleError::Stale`] when the receipt
    /// is refused, and [`SettleError::Store`] when the store failed: not done, or an outcome
    /// it cannot know (a lost reply; a commit still failing when the store's commit timeout
    /// ran out). Never a wrong definite answer.
    fn ack(&self, ticket: Self::Ticket) -> impl Future<Output = Result<Acked, SettleError>> + Send;

    /// Acks several leases in one step; one result per ticket, in order.
    fn ack_many(
        &self,
        tickets: Vec<Self::Ticket>,
    ) -> impl Future<Output = Vec<Result<Acked, SettleError>>> + Send;

    /// A whole batch ack done at once, for a store whose settles are ready at once:
    /// every delivery taken out of `deliveries` (left empty), in order: those of another
    /// store onto `foreign`, untouched; the others acked with one clock reading at this
    /// call, the refused ones onto `stale` (those released already first). Returns the
    /// acked ids in order. Default: `None`, `deliveries` untouched (the caller takes them
    /// apart and calls [`ack_many`](Store::ack_many)).
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
    /// ([`lease_key`](Store::lease_key)) runs: handed out
    /// to every later delivery of the item ([`progress`](Store::progress)) until it leaves for good
    /// (see the [`progress`](crate::progress) module for what keeps and drops it). `Ok`
    /// once durable; [`SettleError::Stale`] when the lease is no longer held (nothing
    /// recorded); [`SettleError::Store`] when the store failed (not recorded, or outcome
    /// unknown). The size was checked by the caller ([`Progress::new`]).
    ///
    /// The future borrows nothing (`'static`, boxed: checkpoints are not on the per-item
    /// path), and the key is a copy: a pool's job records a checkpoint while the pool keeps
    /// the ticket. Default: refused, not done ("this store keeps no
    /// checkpoints"); every store of this workspace keeps them.
    fn checkpoint(&self, lease: LeaseKey, progress: Progress) -> Checkpointing {
        let _ = (lease, progress);
        Box::pin(std::future::ready(Err(SettleError::Store(
            StoreError::not_done("this store keeps no checkpoints"),
        ))))
    }

    /// The item's last checkpoint as the store knows it for `ticket`'s lease, read when a
    /// handler asks ([`Delivery::progress`](crate::Delivery::progress)), never on the
    /// per-item path: the memory store's (and SQLite's) current one, Postgres's as the
    /// claim read it. Default: none.
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

    /// Whether this store snoozes ([`snooze`](Store::snooze) puts the item back uncounted).
    /// Default `false`: [`Delivery::snooze`] is then refused with
    /// [`SettleError::Unsupported`], the lease kept, and a pool's
    /// [`JobError::snooze`](crate::JobError::snooze) is a counted retry after the delay.
    fn snoozes(&self) -> bool {
        false
    }

    /// Puts the item back for `delay` without counting the attempt, within the queue's
    /// bound per item ([`Config::with_max_snoozes`](leaseq_core::Config::with_max_snoozes);
    /// past it the snooze counts, see [`Queue::snooze`](leaseq_core::Queue::snooze)). Called
    /// only when [`snoozes`](Store::snoozes) says so. Default (a store without snooze): a
    /// counted retry after `delay` ([`Snoozed::Counted`]).
    fn snooze(
        &self,
        ticket: Self::Ticket,
        delay: Duration,
    ) -> impl Future<Output = Result<Snoozed, SettleError>> + Send {
        let failure = Failure::with_reason(leaseq_core::Reason::Released)
            .and_error("snoozed on a store without snooze")
            .retry_after(delay);
        let nack = self.nack(ticket, failure);
        async move { nack.await.map(Snoozed::Counted) }
    }

    /// Whether every settle's future is ready on its first poll (the memory store): then
    /// a pool settles in the worker, polling the settle once, as nothing is gained by
    /// handing it over to finish in the background (a settle still pending after that poll
    /// is dropped and counted as failed). Default `false`.
    fn settles_at_once(&self) -> bool {
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
    /// `step.state.name` is `step.expected` (compare-and-set): pushes every tick's job (one
    /// refused as a duplicate key is counted, not an error), takes back the waiting holders
    /// of `step.withdraw` (dead letters of reason `Expired`), and stores `step.state`.
    /// Otherwise nothing changes: [`ScheduleCommitError::Moved`] when the cursor is not the
    /// one read (another scheduler moved it), [`ScheduleCommitError::Push`] when a push is
    /// refused (none of the step's is made). `Ok` once durable, as a push's `Ok`.
    fn commit_schedule(
        &self,
        step: ScheduleCommit<T>,
    ) -> impl Future<Output = Result<ScheduleCommitted, ScheduleCommitError<T>>> + Send;

    /// Every schedule kept for this queue, by name.
    fn schedules(&self) -> impl Future<Output = Result<Vec<ScheduleState>, StoreError>> + Send;

    /// Completes once every change made so far (pushes included) is durable; an error when
    /// the store could not make them durable before its commit timeout (their outcome is
    /// then unknown: they stay queued and land if the store recovers). Ready at once with
    /// `Ok` for the memory store (the default). [`LeaseQueue::push`](crate::LeaseQueue::push)
    /// and its variants await it after the item was accepted, so that a push that returned
    /// `Ok` is on disk ([`PushError::Unconfirmed`] otherwise); `try_push` does not (fire and
    /// forget).
    fn synced(&self) -> impl Future<Output = Result<(), StoreError>> + Send {
        std::future::ready(Ok(()))
    }
}

/// Gives a wait's registration back to its store when the waiting future ends or is
/// dropped.
pub(crate) struct StopWaiting<'a, T, S: Store<T>>(pub(crate) &'a S, pub(crate) &'a mut S::Waiting);

impl<T, S: Store<T>> Drop for StopWaiting<'_, T, S> {
    fn drop(&mut self) {
        self.0.stop_waiting(self.1);
    }
}
