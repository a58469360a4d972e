//! Workflows and batches read for an operator from any [`DependencyStore`], written once:
//! each step's graph state joined with its message's record in the queue (live: its state
//! and attempts; dead letter: attempts and last error), which the operator reads its own
//! way (a `LocalOperator` through the queue handle; a store's operator through its
//! inspector).

use std::future::Future;

use leaseq_core::graph::{BatchId, NodeId, StepState, WorkflowId};
use leaseq_core::MessageId;

use crate::dependencies::{DependencyError, DependencyStore};
use crate::stored::StoredItem;

use super::graph_views::{BatchView, StepStatus, StepView, WorkflowView};
use super::OperatorError;

/// A dependency call's refusal as an operator's: a store failure, or refused in words.
pub fn graph_error(e: DependencyError) -> OperatorError {
    match e {
        DependencyError::Store(e) => OperatorError::store(&e),
        e => OperatorError::Refused(e.to_string()),
    }
}

/// A step's view: its graph `state`, and `record`'s (the queue's record of its message,
/// read by the operator).
async fn step<R, Fut>(
    name: &str,
    node: NodeId,
    state: StepState,
    record: &R,
) -> Result<StepView, OperatorError>
where
    R: Fn(MessageId) -> Fut + Sync,
    Fut: Future<Output = Result<Option<StoredItem>, OperatorError>> + Send,
{
    let message = match state {
        StepState::Queued(m) | StepState::Acked(m) | StepState::DeadLettered(m) => Some(m),
        _ => None,
    };
    let found = match state {
        StepState::Queued(m) | StepState::DeadLettered(m) => record(m).await?,
        _ => None,
    };
    let in_queue = found.as_ref().map(|r| r.state);
    let mut view = StepView::new(name, node, StepStatus::of(state, in_queue));
    view.message = message;
    if let Some(r) = found {
        view.attempts = Some(r.attempts);
        view.last_error = r.last_error;
    }
    Ok(view)
}

/// The workflow `id` of `store` (`None`: there is none), each step's message read with
/// `record` (`Ok(None)`: the queue no longer has it).
pub async fn workflow_view<T, S, R, Fut>(
    store: &S,
    id: WorkflowId,
    record: &R,
) -> Result<Option<WorkflowView>, OperatorError>
where
    S: DependencyStore<T>,
    R: Fn(MessageId) -> Fut + Sync,
    Fut: Future<Output = Result<Option<StoredItem>, OperatorError>> + Send,
{
    let Some(steps) = store.workflow_steps(id).await.map_err(graph_error)? else {
        return Ok(None);
    };
    let mut views = Vec::with_capacity(steps.len());
    for s in steps {
        let mut view = step(&s.name, s.node, s.state, record).await?;
        view.after = s.after;
        view.result_size = s.result_len.map(|n| n as u64);
        views.push(view);
    }
    Ok(Some(WorkflowView::new(id, views)))
}

/// The batch `id` of `store` (`None`: there is none), its callback's message read with
/// `record`.
pub async fn batch_view<T, S, R, Fut>(
    store: &S,
    id: BatchId,
    record: &R,
) -> Result<Option<BatchView>, OperatorError>
where
    S: DependencyStore<T>,
    R: Fn(MessageId) -> Fut + Sync,
    Fut: Future<Output = Result<Option<StoredItem>, OperatorError>> + Send,
{
    let (Some(counts), Some((callback, on))) = (
        store.batch_counts(id).await.map_err(graph_error)?,
        store.batch_callback(id).await.map_err(graph_error)?,
    ) else {
        return Ok(None);
    };
    let Some(state) = store.job_state(callback).await.map_err(graph_error)? else {
        return Ok(None);
    };
    let callback = step("callback", callback, state, record).await?;
    Ok(Some(BatchView::new(id, on, counts, callback)))
}

/// `store`'s workflows after `after`, at most `limit`, each read as [`workflow_view`] does
/// (one forgotten since it was listed is left out).
pub async fn workflow_views<T, S, R, Fut>(
    store: &S,
    after: Option<WorkflowId>,
    limit: usize,
    record: &R,
) -> Result<Vec<WorkflowView>, OperatorError>
where
    S: DependencyStore<T>,
    R: Fn(MessageId) -> Fut + Sync,
    Fut: Future<Output = Result<Option<StoredItem>, OperatorError>> + Send,
{
    let ids = store.workflows(after, limit).await.map_err(graph_error)?;
    let mut all = Vec::with_capacity(ids.len());
    for id in ids {
        all.extend(workflow_view(store, id, record).await?);
    }
    Ok(all)
}

/// `store`'s batches after `after`, at most `limit`, each read as [`batch_view`] does.
pub async fn batch_views<T, S, R, Fut>(
    store: &S,
    after: Option<BatchId>,
    limit: usize,
    record: &R,
) -> Result<Vec<BatchView>, OperatorError>
where
    S: DependencyStore<T>,
    R: Fn(MessageId) -> Fut + Sync,
    Fut: Future<Output = Result<Option<StoredItem>, OperatorError>> + Send,
{
    let ids = store.batches(after, limit).await.map_err(graph_error)?;
    let mut all = Vec::with_capacity(ids.len());
    for id in ids {
        all.extend(batch_view(store, id, record).await?);
    }
    Ok(all)
}
