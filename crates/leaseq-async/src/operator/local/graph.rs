//! [`GraphHandle`]: a queue's dependency graph (workflows, batches) behind an object-safe
//! adapter, for [`LocalOperator`](super::LocalOperator)'s queues whose store is a
//! [`DependencyStore`]. Each step's view joins the graph's state with the queue's own
//! record of its message (live: its state and attempts; dead letter: attempts and last
//! error), read through the queue's handle.

use leaseq_core::graph::{BatchId, NodeId, StepState, WorkflowId};
use leaseq_core::MessageId;

use crate::dependencies::{DependencyError, DependencyStore};
use crate::page::Page;
use crate::runtime::Runtime;
use crate::store::Store;
use crate::stored::StoredItem;

use super::super::graph_views::{BatchView, StepStatus, StepView, WorkflowView};
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

/// A graph's refusal as an operator's: a store failure, or refused in words.
fn refused(e: DependencyError) -> OperatorError {
    match e {
        DependencyError::Store(e) => OperatorError::store(&e),
        e => OperatorError::Refused(e.to_string()),
    }
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

    /// A step's view: its graph state with its message's record.
    async fn step(
        &self,
        name: &str,
        node: NodeId,
        state: StepState,
    ) -> Result<StepView, OperatorError> {
        let message = match state {
            StepState::Queued(m) | StepState::Acked(m) | StepState::DeadLettered(m) => Some(m),
            _ => None,
        };
        let record = match (state, message) {
            (StepState::Queued(m) | StepState::DeadLettered(m), _) => self.message(m).await?,
            _ => None,
        };
        let mut view = StepView::new(
            name,
            node,
            StepStatus::of(state, record.as_ref().map(|r| r.state)),
        );
        view.message = message;
        if let Some(r) = record {
            view.attempts = Some(r.attempts);
            view.last_error = r.last_error;
        }
        Ok(view)
    }

    async fn workflow(&self, id: WorkflowId) -> Result<Option<WorkflowView>, OperatorError> {
        let store = self.queue.store();
        let Some(steps) = store.workflow_steps(id).await.map_err(refused)? else {
            return Ok(None);
        };
        let mut views = Vec::with_capacity(steps.len());
        for s in steps {
            let mut view = self.step(&s.name, s.node, s.state).await?;
            view.after = s.after;
            view.result_size = s.result_len.map(|n| n as u64);
            views.push(view);
        }
        Ok(Some(WorkflowView::new(id, views)))
    }

    async fn batch(&self, id: BatchId) -> Result<Option<BatchView>, OperatorError> {
        let store = self.queue.store();
        let (Some(counts), Some((callback, on))) = (
            store.batch_counts(id).await.map_err(refused)?,
            store.batch_callback(id).await.map_err(refused)?,
        ) else {
            return Ok(None);
        };
        let Some(state) = store.job_state(callback).await.map_err(refused)? else {
            return Ok(None);
        };
        let callback = self.step("callback", callback, state).await?;
        Ok(Some(BatchView::new(id, on, counts, callback)))
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
            let ids = self
                .queue
                .store()
                .workflows(after, limit)
                .await
                .map_err(refused)?;
            let mut all = Vec::with_capacity(ids.len());
            for id in ids {
                // (One forgotten since it was listed is left out.)
                all.extend(self.workflow(id).await?);
            }
            Ok(all)
        })
    }

    fn batches(&self, after: Option<BatchId>, limit: usize) -> Answer<'_, Vec<BatchView>> {
        Box::pin(async move {
            let ids = self
                .queue
                .store()
                .batches(after, limit)
                .await
                .map_err(refused)?;
            let mut all = Vec::with_capacity(ids.len());
            for id in ids {
                all.extend(self.batch(id).await?);
            }
            Ok(all)
        })
    }

    fn cancel_workflow(&self, id: WorkflowId) -> Answer<'_, u64> {
        Box::pin(async move {
            let store = self.queue.store();
            let cancelled = store.cancel_workflow(id).await.map_err(refused)?;
            Ok(cancelled.len() as u64)
        })
    }

    fn retry_step<'a>(&'a self, id: WorkflowId, step: &'a str) -> Answer<'a, ()> {
        Box::pin(async move {
            let store = self.queue.store();
            store.retry_step(id, step).await.map_err(refused)
        })
    }
}
