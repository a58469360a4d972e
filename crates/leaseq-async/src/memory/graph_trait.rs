//! [`DependencyStore`] for the memory store: each call's answer made in one critical
//! section (`graph_ops.rs`), its future ready on the first poll.

use std::future::{ready, Future};

use leaseq_core::graph::{BatchCounts, BatchId, BatchOn, NodeId, OnFailedParent};
use leaseq_core::graph::{StepState, WorkflowId, WorkflowSpec};
use leaseq_core::MessageId;

use super::MemoryStore;
use crate::dependencies::WorkflowStep;
use crate::dependencies::{DependencyError, DependencyStore, Parent, ParentOutcome, Refused};
use crate::runtime::Runtime;

impl<T: Clone + Send + 'static, R: Runtime> DependencyStore<T> for MemoryStore<T, R> {
    fn push_after(
        &self,
        item: T,
        parents: &[Parent],
        policy: OnFailedParent,
    ) -> impl Future<Output = Result<NodeId, Refused<T>>> + Send {
        ready(self.push_after_now(item, parents, policy))
    }

    fn push_workflow(
        &self,
        spec: WorkflowSpec<T>,
    ) -> impl Future<Output = Result<WorkflowId, Refused<WorkflowSpec<T>>>> + Send {
        ready(self.push_workflow_now(spec))
    }

    fn workflow_steps(
        &self,
        workflow: WorkflowId,
    ) -> impl Future<Output = Result<Option<Vec<WorkflowStep>>, DependencyError>> + Send {
        ready(Ok(self.workflow_steps_now(workflow)))
    }

    fn cancel_workflow(
        &self,
        workflow: WorkflowId,
    ) -> impl Future<Output = Result<Vec<NodeId>, DependencyError>> + Send {
        ready(self.cancel_workflow_now(workflow))
    }

    fn retry_step(
        &self,
        workflow: WorkflowId,
        step: &str,
    ) -> impl Future<Output = Result<(), DependencyError>> + Send {
        ready(self.retry_step_now(workflow, step))
    }

    fn push_batch(
        &self,
        children: Vec<T>,
        callback: T,
        on: BatchOn,
    ) -> impl Future<Output = Result<BatchId, Refused<(Vec<T>, T)>>> + Send {
        ready(self.push_batch_now(children, callback, on))
    }

    fn batch_counts(
        &self,
        batch: BatchId,
    ) -> impl Future<Output = Result<Option<BatchCounts>, DependencyError>> + Send {
        ready(Ok(self.batch_counts_now(batch)))
    }

    fn forget_workflow(
        &self,
        workflow: WorkflowId,
    ) -> impl Future<Output = Result<(), DependencyError>> + Send {
        ready(self.forget_workflow_now(workflow))
    }

    fn forget_batch(
        &self,
        batch: BatchId,
    ) -> impl Future<Output = Result<(), DependencyError>> + Send {
        ready(self.forget_batch_now(batch))
    }

    fn record_result(
        &self,
        message: MessageId,
        result: &[u8],
    ) -> impl Future<Output = Result<(), DependencyError>> + Send {
        ready(self.record_result_now(message, result))
    }

    fn parent_outcomes(
        &self,
        message: MessageId,
    ) -> impl Future<Output = Result<Option<Vec<ParentOutcome>>, DependencyError>> + Send {
        ready(Ok(self.parent_outcomes_now(message)))
    }

    fn job_state(
        &self,
        node: NodeId,
    ) -> impl Future<Output = Result<Option<StepState>, DependencyError>> + Send {
        ready(Ok(self.job_state_now(node)))
    }

    fn job_of(
        &self,
        message: MessageId,
    ) -> impl Future<Output = Result<Option<NodeId>, DependencyError>> + Send {
        ready(Ok(self.job_of_now(message)))
    }
}
