//! `impl DependencyStore for PgStore`: the checks that need no round trip (closed, bounded,
//! encoding and size, the workflow's spec by the core's `WorkflowSpec`), then one
//! transaction (`graph.rs`, `graph_read.rs`, `graph_ops.rs`). A refusal hands the payload
//! back whole.

use leaseq_async::dependencies::{
    BatchCounts, BatchId, BatchOn, DependencyError, DependencyStore, NodeId, OnFailedParent,
    Parent, ParentOutcome, Refused, StepState, WorkflowId, WorkflowSpec, WorkflowStep,
};
use leaseq_core::MessageId;

use crate::store::PgStore;

impl<T: Clone + Send + Sync + 'static> DependencyStore<T> for PgStore<T> {
    async fn push_after(
        &self,
        item: T,
        parents: &[Parent],
        policy: OnFailedParent,
    ) -> Result<NodeId, Refused<T>> {
        let checked = self.graph_open().and_then(|()| self.graph_encode(&item));
        let r = match checked {
            Ok(bytes) => self.graph_push_after(bytes, parents, policy).await,
            Err(e) => Err(e),
        };
        r.map_err(|error| Refused::new(error, item))
    }

    async fn push_workflow(
        &self,
        spec: WorkflowSpec<T>,
    ) -> Result<WorkflowId, Refused<WorkflowSpec<T>>> {
        if let Err(error) = self.graph_open() {
            return Err(Refused::new(error, spec));
        }
        let steps = match spec.into_checked() {
            Ok(steps) => steps,
            Err(refused) => {
                let error = DependencyError::Workflow(refused.error);
                return Err(Refused::new(error, refused.spec));
            }
        };
        let mut names = vec![String::new(); steps.len()];
        let mut encoded = Vec::with_capacity(steps.len());
        let mut failed = None;
        for s in &steps {
            names[s.spec_index] = s.name.clone();
            match self.graph_encode(&s.payload) {
                Ok(bytes) => encoded.push((s.name.clone(), bytes, s.parents.clone(), s.policy)),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let r = match failed {
            Some(e) => Err(e),
            None => self.graph_push_workflow(encoded, names).await,
        };
        r.map_err(|error| Refused::new(error, rebuild(steps)))
    }

    async fn workflow_steps(
        &self,
        workflow: WorkflowId,
    ) -> Result<Option<Vec<WorkflowStep>>, DependencyError> {
        self.graph_workflow_steps(workflow).await
    }

    async fn cancel_workflow(&self, workflow: WorkflowId) -> Result<Vec<NodeId>, DependencyError> {
        self.graph_open()?;
        self.graph_cancel_workflow(workflow).await
    }

    async fn retry_step(&self, workflow: WorkflowId, step: &str) -> Result<(), DependencyError> {
        self.graph_open()?;
        self.graph_retry_step(workflow, step).await
    }

    async fn push_batch(
        &self,
        children: Vec<T>,
        callback: T,
        on: BatchOn,
    ) -> Result<BatchId, Refused<(Vec<T>, T)>> {
        let encoded = self.graph_open().and_then(|()| {
            let kids = children
                .iter()
                .map(|c| self.graph_encode(c))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((kids, self.graph_encode(&callback)?))
        });
        let r = match encoded {
            Ok((kids, cb)) => self.graph_push_batch(kids, cb, on).await,
            Err(e) => Err(e),
        };
        r.map_err(|error| Refused::new(error, (children, callback)))
    }

    async fn batch_counts(&self, batch: BatchId) -> Result<Option<BatchCounts>, DependencyError> {
        self.graph_batch_counts(batch).await
    }

    async fn forget_workflow(&self, workflow: WorkflowId) -> Result<(), DependencyError> {
        self.graph_forget_workflow(workflow).await
    }

    async fn forget_batch(&self, batch: BatchId) -> Result<(), DependencyError> {
        self.graph_forget_batch(batch).await
    }

    async fn record_result(
        &self,
        message: MessageId,
        result: &[u8],
    ) -> Result<(), DependencyError> {
        self.graph_record_result(message, result).await
    }

    async fn parent_outcomes(
        &self,
        message: MessageId,
    ) -> Result<Option<Vec<ParentOutcome>>, DependencyError> {
        self.graph_parent_outcomes(message).await
    }

    async fn job_state(&self, node: NodeId) -> Result<Option<StepState>, DependencyError> {
        self.graph_job_state(node).await
    }

    async fn job_of(&self, message: MessageId) -> Result<Option<NodeId>, DependencyError> {
        self.graph_job_of(message).await
    }

    async fn workflows(
        &self,
        after: Option<WorkflowId>,
        limit: usize,
    ) -> Result<Vec<WorkflowId>, DependencyError> {
        self.graph_workflows(after, limit).await
    }

    async fn batches(
        &self,
        after: Option<BatchId>,
        limit: usize,
    ) -> Result<Vec<BatchId>, DependencyError> {
        self.graph_batches(after, limit).await
    }

    async fn batch_callback(
        &self,
        batch: BatchId,
    ) -> Result<Option<(NodeId, BatchOn)>, DependencyError> {
        self.graph_batch_callback(batch).await
    }
}

/// The spec again from its checked steps (a refusal hands it back): same steps, same
/// names, parents and policies, in the spec's order.
fn rebuild<T>(steps: Vec<leaseq_core::graph::CheckedStep<T>>) -> WorkflowSpec<T> {
    let names: Vec<String> = steps.iter().map(|s| s.name.clone()).collect();
    let mut slots: Vec<Option<_>> = (0..steps.len()).map(|_| None).collect();
    for s in steps {
        let at = s.spec_index;
        let after: Vec<String> = s.parents.iter().map(|&p| names[p].clone()).collect();
        slots[at] = Some((s.name, s.payload, after, s.policy));
    }
    slots.into_iter().flatten().fold(
        WorkflowSpec::new(),
        |spec, (name, payload, after, policy)| {
            let after: Vec<&str> = after.iter().map(String::as_str).collect();
            spec.step_with(name, payload, &after, policy)
        },
    )
}
