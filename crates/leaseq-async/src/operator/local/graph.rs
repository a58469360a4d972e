//! [`GraphHandle`]: a queue's dependency graph (workflows, batches) behind an object-safe
//! adapter, for [`LocalOperator`](super::LocalOperator)'s queues whose store is a
//! [`DependencyStore`]: the views read as `graph_reads.rs` reads them for every store, each
//! step's message looked up through the queue's handle (live: its state and attempts; dead
//! letter: attempts and last error).

use leaseq_core::graph::{BatchId, WorkflowId};
use leaseq_core::MessageId;

use crate::dependencies::DependencyStore;
use crate::page::Page;
use crate::runtime::Runtime;
use crate::store::Store;
use crate::stored::StoredItem;

use super::super::graph_calls;
use super::super::graph_reads::{batch_views, workflow_views};
use super::super::graph_views::{BatchView, WorkflowView};
use super::super::{DeadQuery, OperatorError};
use super::handle::{Answer, Held, QueueHandle};

/// One queue's dependency graph, type-erased: what the operator's workflow and batch calls
/// ask of it, each answer boxed.
pub(super) trait GraphHandle: Send + Sync {
    /// Its workflows after `after`, at most `limit`, each with its steps.
    fn workflows(&self, after: Option<WorkflowId>, limit: usize) -> Answer<'_, Vec<WorkflowView>>;
    /// Its batches after `after`, at most `limit`, each with its counts and callback.
    fn batches(&self, after: Option<BatchId>, limit: usize) -> Answer<'_, Vec<BatchView>>;
    /// Cancels what is left of a workflow; how many steps.
    fn cancel_workflow(&self, id: WorkflowId) -> Answer<'_, u64>;
    /// Retries a failed step.
    fn retry_step<'a>(&'a self, id: WorkflowId, step: &'a str) -> Answer<'a, ()>;
}

/// The page of one entry: `m`.
fn only(m: MessageId) -> Page {
    match m.get().checked_sub(1) {
        Some(before) => Page::first(1).next(MessageId::new(before)),
        None => Page::first(1),
    }
}

impl<T, R, S> Held<T, R, S>
where
    T: Send + Sync + 'static,
    R: Runtime,
    S: DependencyStore<T> + Store<T, Runtime = R>,
{
    /// The queue's record of message `m`: live, else its dead letter (`None`: gone, as
    /// after its ack).
    async fn message(&self, m: MessageId) -> Result<Option<StoredItem>, OperatorError> {
        let live = QueueHandle::items(self, only(m)).await?;
        if let Some(item) = live.into_iter().find(|i| i.id == m) {
            return Ok(Some(item));
        }
        let dead = QueueHandle::dead_letters(self, only(m), &DeadQuery::all()).await?;
        Ok(dead.into_iter().find(|i| i.id == m))
    }
}

impl<T, R, S> GraphHandle for Held<T, R, S>
where
    T: Send + Sync + 'static,
    R: Runtime,
    S: DependencyStore<T> + Store<T, Runtime = R>,
{
    fn workflows(&self, after: Option<WorkflowId>, limit: usize) -> Answer<'_, Vec<WorkflowView>> {
        Box::pin(async move {
            let record = |m| self.message(m);
            workflow_views(&**self.queue.store(), after, limit, &record).await
        })
    }

    fn batches(&self, after: Option<BatchId>, limit: usize) -> Answer<'_, Vec<BatchView>> {
        Box::pin(async move {
            let record = |m| self.message(m);
            batch_views(&**self.queue.store(), after, limit, &record).await
        })
    }

    fn cancel_workflow(&self, id: WorkflowId) -> Answer<'_, u64> {
        Box::pin(graph_calls::cancel_workflow(&**self.queue.store(), id))
    }

    fn retry_step<'a>(&'a self, id: WorkflowId, step: &'a str) -> Answer<'a, ()> {
        Box::pin(graph_calls::retry_step(&**self.queue.store(), id, step))
    }
}
