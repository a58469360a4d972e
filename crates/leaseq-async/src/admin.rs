//! The operator API, the same on every store: stats counted afresh, the items and dead
//! letters page by page, the schedules kept in the queue, the record of finished jobs (on a
//! store that keeps one), redrive, purge (all, or the dead
//! letters a [`DeadFilter`] takes) and cancel, as methods of [`LeaseQueue`].
//!
//! Each is one store operation: a lock for the memory store, a commit for SQLite, a
//! statement (or a short transaction) for Postgres. A durable store answers once the change
//! is durable, or says it is not ([`StoreError`], [`AdminError::Store`]).

use leaseq_core::{CancelError, DeadLetter, ItemView, MessageId, RedriveError, Stats};

use crate::admin_error::AdminError;
use crate::codec::CodecError;
use crate::dead_filter::DeadFilter;
use crate::history::{Finished, HistoryQuery};
use crate::page::Page;
use crate::progress::Progress;
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;
use crate::schedule_store::ScheduleState;
use crate::store::Store;
use crate::store_error::StoreError;

impl<T, R: Runtime, S: Store<T, Runtime = R>> LeaseQueue<T, R, S> {
    /// The queue's stats counted afresh: for a store shared by several processes (Postgres)
    /// its rows counted now, where [`stats`](Self::stats) gives the last periodic count.
    pub async fn refresh_stats(&self) -> Result<Stats, StoreError> {
        self.store.refresh_stats().await
    }

    /// The live items (ready, delayed, in flight) of `page`, in id order, each with its
    /// state, attempts and, in flight, its lease deadline.
    pub async fn peek(&self, page: Page) -> Result<Vec<ItemView>, StoreError> {
        self.store.peek(page).await
    }

    /// The dead letters of `page`, in id order: each item, or the [`CodecError`] of a
    /// stored item whose bytes do not decode (a durable store's item written by another
    /// version, say), with its reason, attempts and last error.
    #[allow(clippy::type_complexity)]
    pub async fn dead_letters(
        &self,
        page: Page,
    ) -> Result<Vec<DeadLetter<Result<T, CodecError>>>, StoreError> {
        self.store.dead_letters(page).await
    }

    /// The handlers' checkpoints of the live items and dead letters of `page` that have
    /// one, in id order: beside [`peek`](Self::peek) and
    /// [`dead_letters`](Self::dead_letters), how far each item's work got (see
    /// [`crate::progress`]).
    pub async fn checkpoints(&self, page: Page) -> Result<Vec<(MessageId, Progress)>, StoreError> {
        self.store.checkpoints(page).await
    }

    /// The record of finished jobs (acked, dead-lettered, cancelled, expired) that `query`
    /// asks for, oldest first, paged and filtered by kind and outcome: kept by a store opened
    /// with a retention window (Postgres's `Options::retention`); none on a store that keeps
    /// no record (the memory and SQLite stores).
    pub async fn history(&self, query: HistoryQuery) -> Result<Vec<Finished>, StoreError> {
        self.store.history(query).await
    }

    /// The schedules kept in this queue (those a [`Scheduler`](crate::Scheduler) has
    /// committed a step of), by name: each one's last tick pushed, next tick, cursor, when
    /// the cursor last moved and its calendar in words.
    pub async fn schedules(&self) -> Result<Vec<ScheduleState>, StoreError> {
        self.store.schedules().await
    }

    /// Pauses the queue for every handle and, on a shared store (Postgres), every process:
    /// no lease is handed out after it (on Postgres, a claim already running when it
    /// commits is the last), until [`resume`](Self::resume). Pushes are still accepted,
    /// and the leases already out run on and can be settled. Receivers, consumers and
    /// pools wait without spinning, and a resume wakes them. Answers whether the queue
    /// was running, once the flag is durable; [`Stats::paused`] shows it.
    ///
    /// ```
    /// # use leaseq_async::{Config, LeaseQueue, SimRuntime};
    /// # use std::time::Duration;
    /// # let rt = SimRuntime::new();
    /// # rt.block_on(async {
    /// let q = LeaseQueue::builder(Config::new(Duration::from_secs(30)))
    ///     .runtime(rt.clone())
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(q.pause().await, Ok(true));
    /// q.push("kept").await.unwrap(); // accepted while paused
    /// assert!(q.try_receive().is_none());
    /// assert!(q.stats().paused);
    /// q.resume().await.unwrap();
    /// assert_eq!(*q.try_receive().unwrap().item(), "kept");
    /// # });
    /// ```
    pub async fn pause(&self) -> Result<bool, StoreError> {
        self.store.set_paused(true).await
    }

    /// Resumes a paused queue (see [`pause`](Self::pause)): leases are handed out again,
    /// and the receivers waiting are woken. Answers whether it was paused.
    pub async fn resume(&self) -> Result<bool, StoreError> {
        self.store.set_paused(false).await
    }

    /// Puts a dead letter back, visible at once, attempts reset, its id, level and key
    /// kept. Refused ([`AdminError::Refused`]) when no dead letter has this id, its time to
    /// live is over, a live item holds its key, or the queue is at capacity.
    pub async fn redrive(&self, id: MessageId) -> Result<MessageId, AdminError<RedriveError>> {
        self.store.redrive(id).await
    }

    /// Redrives every dead letter that can go back, in id order; returns how many went.
    /// Expired ones and those whose key a live item holds stay; it stops at capacity.
    /// The same as [`redrive_matching`](Self::redrive_matching) with [`DeadFilter::all`].
    pub async fn redrive_all(&self) -> Result<u64, StoreError> {
        self.store.redrive_matching(DeadFilter::all()).await
    }

    /// Redrives every dead letter `filter` takes (by reason, by job kind) that can go back,
    /// in id order, as [`redrive_all`](Self::redrive_all) does; returns how many went.
    ///
    /// ```
    /// # use leaseq_async::{Config, DeadFilter, Failure, LeaseQueue, Reason, SimRuntime};
    /// # use std::time::Duration;
    /// # let rt = SimRuntime::new();
    /// # rt.block_on(async {
    /// let q = LeaseQueue::builder(Config::new(Duration::from_secs(5)).with_max_attempts(1))
    ///     .runtime(rt.clone())
    ///     .build()
    ///     .unwrap();
    /// q.push("flaky").await.unwrap();
    /// q.push("poison").await.unwrap();
    /// q.receive().await.unwrap().nack_with(Failure::error("503")).await.unwrap();
    /// q.receive().await.unwrap().dead_letter("bad input").await.unwrap();
    /// // What failed its attempts goes back; what a handler rejected stays.
    /// let n = q.redrive_matching(DeadFilter::all().reason(Reason::Nacked)).await;
    /// assert_eq!(n, Ok(1));
    /// assert_eq!(q.stats().dead, 1);
    /// # });
    /// ```
    pub async fn redrive_matching(&self, filter: DeadFilter<T>) -> Result<u64, StoreError> {
        self.store.redrive_matching(filter).await
    }

    /// Deletes every dead letter; returns how many. The same as
    /// [`purge_dead_matching`](Self::purge_dead_matching) with [`DeadFilter::all`].
    pub async fn purge_dead_letters(&self) -> Result<u64, StoreError> {
        self.store.purge_dead_matching(DeadFilter::all()).await
    }

    /// Deletes every dead letter `filter` takes (by reason, by job kind); returns how many.
    pub async fn purge_dead_matching(&self, filter: DeadFilter<T>) -> Result<u64, StoreError> {
        self.store.purge_dead_matching(filter).await
    }

    /// Deletes every ready and delayed item; returns how many. Items in flight stay with
    /// their holders (ack or nack them as usual); dead letters stay (see
    /// [`purge_dead_letters`](Self::purge_dead_letters)).
    pub async fn purge(&self) -> Result<u64, StoreError> {
        self.store.purge().await
    }

    /// Removes a ready or delayed item and hands it back. An item in flight is left to its
    /// holder (`CancelError::InFlight`); see [`cancel_leased`](Self::cancel_leased).
    pub async fn cancel(&self, id: MessageId) -> Result<T, AdminError<CancelError>> {
        self.store.cancel(id, false).await
    }

    /// Removes an item even if it is in flight: its holder's ack, nack or extend then fails
    /// with `ReceiptError::Cancelled`. Hands the item back.
    pub async fn cancel_leased(&self, id: MessageId) -> Result<T, AdminError<CancelError>> {
        self.store.cancel(id, true).await
    }
}
