//! An operator's workflow and batch calls on a store opened for them, written once: the
//! SQLite and Postgres operators open their queue's store (as their other actions do) and
//! answer [`Operator::workflows`], [`Operator::batches`], [`Operator::cancel_workflow`] and
//! [`Operator::retry_step`] through these, each step's message read back through the
//! operator's own [`Operator::item`] (its inspector: live, else dead letter).

use leaseq_core::graph::{BatchId, WorkflowId};

use crate::dependencies::DependencyStore;

use super::graph_reads::{batch_views, graph_error, workflow_views};
use super::graph_views::{BatchView, WorkflowView};
use super::{Operator, OperatorError};

/// `store`'s workflows after `after`, at most `limit`, as [`workflow_views`] reads them,
/// each step's message looked up with `op`'s [`item`](Operator::item) in `queue`.
pub async fn workflows_of<O, T, S>(
    op: &O,
    queue: &str,
    store: &S,
    after: Option<WorkflowId>,
    limit: usize,
) -> Result<Vec<WorkflowView>, OperatorError>
where
    O: Operator,
    S: DependencyStore<T>,
{
    let record = |m| op.item(queue, m);
    workflow_views(store, after, limit, &record).await
}

/// `store`'s batches after `after`, at most `limit`, as [`batch_views`] reads them, each
/// callback's message looked up with `op`'s [`item`](Operator::item) in `queue`.
pub async fn batches_of<O, T, S>(
    op: &O,
    queue: &str,
    store: &S,
    after: Option<BatchId>,
    limit: usize,
) -> Result<Vec<BatchView>, OperatorError>
where
    O: Operator,
    S: DependencyStore<T>,
{
    let record = |m| op.item(queue, m);
    batch_views(store, after, limit, &record).await
}

/// Cancels what is left of the workflow `id` of `store`; how many steps were cancelled.
pub async fn cancel_workflow<T, S: DependencyStore<T>>(
    store: &S,
    id: WorkflowId,
) -> Result<u64, OperatorError> {
    let cancelled = store.cancel_workflow(id).await.map_err(graph_error)?;
    Ok(cancelled.len() as u64)
}

/// Retries the failed step `step` of the workflow `id` of `store`, and with it the steps
/// its failure cancelled.
pub async fn retry_step<T, S: DependencyStore<T>>(
    store: &S,
    id: WorkflowId,
    step: &str,
) -> Result<(), OperatorError> {
    store.retry_step(id, step).await.map_err(graph_error)
}
