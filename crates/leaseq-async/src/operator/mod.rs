//! The operator interface ([`Operator`]): one shape for every store's queues, read and
//! acted on from outside the service that runs them (another process, a tool). The
//! `leaseq` command line and the `leaseq-web` dashboard are written once over it, so a
//! store that implements it gets both at once: `leaseq-sqlite` implements it for a queue
//! file (`SqliteOperator`, over its `FileView`), `leaseq-postgres` for a schema's queues
//! (`PgOperator`, over its `PgInspector`), and [`LocalOperator`] for the queues of this
//! process, on any store (the dashboard mounted in a service's own app).
//!
//! Feature `operator` (implies `router`: lists and bulk calls filter by job kind, a router
//! envelope's).
//!
//! - `mod.rs`: the trait.
//! - `error.rs`: [`OperatorError`].
//! - `capabilities.rs`: [`Capabilities`], the actions an operator offers.
//! - `query.rs`: [`DeadQuery`] and [`LiveQuery`], which items a list or bulk call takes.
//! - `cancel.rs`: [`cancel_matching`], the bulk cancel every store's operator runs.
//! - `graph_views.rs`: [`WorkflowView`], [`BatchView`], [`StepView`], [`StepStatus`]: what
//!   an operator shows of workflows and batches.
//! - `graph_reads.rs`: [`workflow_view`], [`batch_view`] and their lists: those views read
//!   from any `DependencyStore`, for every store's operator.
//! - `graph_calls.rs`: the workflow and batch calls of an operator that opens its queue's
//!   store for them (SQLite, Postgres).
//! - `local/`: [`LocalOperator`], this process's queues.
//! - `queue_calls.rs`: an operator's actions on a queue handle, for the stores' operators.
//! - `blocking.rs`: [`on_blocking_thread`], for a store whose reads block.

mod blocking;
mod cancel;
mod capabilities;
mod error;
pub mod graph_calls;
mod graph_reads;
mod graph_views;
mod local;
mod query;
pub mod queue_calls;

use std::future::Future;
use std::time::Duration;

use leaseq_core::graph::{BatchId, WorkflowId};
use leaseq_core::MessageId;

use crate::history::{Finished, HistoryQuery};
use crate::page::Page;
use crate::schedule_store::ScheduleState;
use crate::stored::{StoredCounts, StoredItem};

pub use blocking::on_blocking_thread;
pub use cancel::cancel_matching;
pub use capabilities::Capabilities;
pub use error::OperatorError;
pub use graph_reads::{batch_view, batch_views, graph_error, workflow_view, workflow_views};
pub use graph_views::{BatchView, StepStatus, StepView, WorkflowView};
pub use local::LocalOperator;
pub use query::{DeadQuery, LiveQuery};

/// A store's queues, for operator tools: read (counts, items, dead letters, schedules, the
/// record of finished jobs) and, where [`capabilities`](Self::capabilities) says, acted on
/// (redrive, purge, pause, cancel).
///
/// The reads change nothing. The actions ([`redrive`](Self::redrive),
/// [`redrive_dead`](Self::redrive_dead), [`purge`](Self::purge),
/// [`purge_dead`](Self::purge_dead), [`set_paused`](Self::set_paused),
/// [`cancel`](Self::cancel)) are refused with [`OperatorError::ReadOnly`] by default, and
/// where [`capabilities`](Self::capabilities) does not announce them: an operator that
/// cannot act from another process (a SQLite file a running service owns) only reads.
pub trait Operator: Send + Sync + 'static {
    /// The kind of store, for page titles ("SQLite", "PostgreSQL"): no path, address or
    /// connection string.
    fn store_kind(&self) -> &'static str;

    /// What the store lets this operator do besides reading (nothing, by default).
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    /// Every queue with its counts, by name.
    fn queues(&self) -> impl Future<Output = Result<Vec<StoredCounts>, OperatorError>> + Send;

    /// `queue`'s counts ([`OperatorError::NoSuchQueue`] for a queue the store does not know).
    fn counts(
        &self,
        queue: &str,
    ) -> impl Future<Output = Result<StoredCounts, OperatorError>> + Send;

    /// `queue`'s live items (ready, delayed, in flight) of `page`, in id order.
    fn items(
        &self,
        queue: &str,
        page: Page,
    ) -> impl Future<Output = Result<Vec<StoredItem>, OperatorError>> + Send;

    /// `queue`'s dead letters that `query` takes, of `page`, in id order.
    fn dead_letters(
        &self,
        queue: &str,
        page: Page,
        query: &DeadQuery,
    ) -> impl Future<Output = Result<Vec<StoredItem>, OperatorError>> + Send;

    /// The schedules `queue` keeps in the store, by name.
    fn schedules(
        &self,
        queue: &str,
    ) -> impl Future<Output = Result<Vec<ScheduleState>, OperatorError>> + Send;

    /// Puts the dead letter `id` of `queue` back, ready at once, its attempts reset.
    fn redrive(
        &self,
        queue: &str,
        id: MessageId,
    ) -> impl Future<Output = Result<(), OperatorError>> + Send {
        let _ = (queue, id);
        async { Err(OperatorError::ReadOnly) }
    }

    /// Puts back the dead letters of `queue` that `query` takes, in id order, as the
    /// queue's `redrive_matching` does (one that expired, or whose key a live item holds,
    /// stays; the queue's capacity stops it); returns how many went.
    fn redrive_dead(
        &self,
        queue: &str,
        query: &DeadQuery,
    ) -> impl Future<Output = Result<u64, OperatorError>> + Send {
        let _ = (queue, query);
        async { Err(OperatorError::ReadOnly) }
    }

    /// How long the oldest ready item of each of `queues` has waited since it became ready,
    /// for those with one ready (a queue not listed has none); `None`: this store cannot say
    /// without reading every ready item (the default).
    fn oldest_ready_ages(
        &self,
        queues: &[String],
    ) -> impl Future<Output = Result<Option<Vec<(String, Duration)>>, OperatorError>> + Send {
        let _ = queues;
        async { Ok(None) }
    }

    /// The record of `queue`'s finished jobs that `query` asks for, oldest first (empty by
    /// default, and where [`capabilities`](Self::capabilities) has no `history`).
    fn history(
        &self,
        queue: &str,
        query: &HistoryQuery,
    ) -> impl Future<Output = Result<Vec<Finished>, OperatorError>> + Send {
        let _ = (queue, query);
        async { Ok(Vec::new()) }
    }

    /// Pauses `queue` (`paused`: no lease handed out, by any process the store reaches,
    /// from its next claim on; pushes still accepted) or resumes it; returns whether the
    /// flag changed (`false`: it already was so).
    fn set_paused(
        &self,
        queue: &str,
        paused: bool,
    ) -> impl Future<Output = Result<bool, OperatorError>> + Send {
        let _ = (queue, paused);
        async { Err(OperatorError::ReadOnly) }
    }

    /// Deletes the dead letters of `queue` that `query` takes; returns how many.
    fn purge_dead(
        &self,
        queue: &str,
        query: &DeadQuery,
    ) -> impl Future<Output = Result<u64, OperatorError>> + Send {
        let _ = (queue, query);
        async { Err(OperatorError::ReadOnly) }
    }

    /// Deletes every ready and delayed item of `queue` (items in flight stay with their
    /// holders, dead letters stay), as the queue's `purge` does; returns how many.
    fn purge(&self, queue: &str) -> impl Future<Output = Result<u64, OperatorError>> + Send {
        let _ = queue;
        async { Err(OperatorError::ReadOnly) }
    }

    /// Cancels the waiting (ready or delayed) items of `queue` that `query` takes, in id
    /// order, as the queue's [`cancel`](crate::LeaseQueue::cancel) does each (an item in
    /// flight is left to its holder; one that went in flight or away since it was listed
    /// is skipped); returns how many were cancelled. A store implements it with
    /// [`cancel_matching`].
    fn cancel(
        &self,
        queue: &str,
        query: &LiveQuery,
    ) -> impl Future<Output = Result<u64, OperatorError>> + Send {
        let _ = (queue, query);
        async { Err(OperatorError::ReadOnly) }
    }

    /// `queue`'s workflows with ids after `after` (`None`: from the first), at most
    /// `limit`, in id order, each with its steps (empty by default, and where
    /// [`capabilities`](Self::capabilities) has no `workflows`).
    fn workflows(
        &self,
        queue: &str,
        after: Option<WorkflowId>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<WorkflowView>, OperatorError>> + Send {
        let _ = (queue, after, limit);
        async { Ok(Vec::new()) }
    }

    /// The workflow `id` of `queue` (`None`: there is none): by default the one entry of
    /// [`workflows`](Self::workflows) from it.
    fn workflow(
        &self,
        queue: &str,
        id: WorkflowId,
    ) -> impl Future<Output = Result<Option<WorkflowView>, OperatorError>> + Send {
        async move {
            let after = id.get().checked_sub(1).map(WorkflowId::new);
            let one = self.workflows(queue, after, 1).await?;
            Ok(one.into_iter().find(|w| w.id == id))
        }
    }

    /// `queue`'s batches with ids after `after`, at most `limit`, in id order, each with
    /// its counts and callback (empty by default, and where
    /// [`capabilities`](Self::capabilities) has no `workflows`).
    fn batches(
        &self,
        queue: &str,
        after: Option<BatchId>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<BatchView>, OperatorError>> + Send {
        let _ = (queue, after, limit);
        async { Ok(Vec::new()) }
    }

    /// The batch `id` of `queue` (`None`: there is none): by default the one entry of
    /// [`batches`](Self::batches) from it.
    fn batch(
        &self,
        queue: &str,
        id: BatchId,
    ) -> impl Future<Output = Result<Option<BatchView>, OperatorError>> + Send {
        async move {
            let after = id.get().checked_sub(1).map(BatchId::new);
            let one = self.batches(queue, after, 1).await?;
            Ok(one.into_iter().find(|b| b.id == id))
        }
    }

    /// Cancels what is left of the workflow `id` of `queue`, as the store's
    /// `cancel_workflow` does (waiting steps, queued ones; a running step's lease goes
    /// stale); returns how many steps were cancelled. Refused ([`OperatorError::ReadOnly`])
    /// by default, and where [`capabilities`](Self::capabilities) lacks `workflows` or
    /// `cancel`.
    fn cancel_workflow(
        &self,
        queue: &str,
        id: WorkflowId,
    ) -> impl Future<Output = Result<u64, OperatorError>> + Send {
        let _ = (queue, id);
        async { Err(OperatorError::ReadOnly) }
    }

    /// Retries the failed step `step` of the workflow `id` of `queue` (dead-lettered:
    /// redriven; cancelled: waiting again), and with it the steps its failure cancelled.
    /// Refused ([`OperatorError::ReadOnly`]) by default, and where
    /// [`capabilities`](Self::capabilities) lacks `workflows` or `redrive`.
    fn retry_step(
        &self,
        queue: &str,
        id: WorkflowId,
        step: &str,
    ) -> impl Future<Output = Result<(), OperatorError>> + Send {
        let _ = (queue, id, step);
        async { Err(OperatorError::ReadOnly) }
    }

    /// How many waiting items of `queue` `query` takes (what [`cancel`](Self::cancel) would
    /// cancel now): its [`items`](Self::items) read a page of 1,000 at a time from the
    /// range's start.
    fn count_live(
        &self,
        queue: &str,
        query: &LiveQuery,
    ) -> impl Future<Output = Result<u64, OperatorError>> + Send {
        async move { cancel::each_listed(self, queue, query, |_| async { Ok(true) }).await }
    }

    /// The item `id` of `queue`, live or dead (`None`: there is none). By default one
    /// page of one entry from each of [`items`](Self::items) and
    /// [`dead_letters`](Self::dead_letters).
    fn item(
        &self,
        queue: &str,
        id: MessageId,
    ) -> impl Future<Output = Result<Option<StoredItem>, OperatorError>> + Send {
        async move {
            let page = match id.get().checked_sub(1) {
                Some(before) => Page::first(1).next(MessageId::new(before)),
                None => Page::first(1),
            };
            let live = self.items(queue, page).await?;
            if let Some(item) = live.into_iter().find(|i| i.id == id) {
                return Ok(Some(item));
            }
            let dead = self.dead_letters(queue, page, &DeadQuery::all()).await?;
            Ok(dead.into_iter().find(|i| i.id == id))
        }
    }
}
