//! Jobs that wait for other jobs, as a queue's store offers them: a job pushed after its
//! parents, a workflow (a DAG of named steps pushed as one unit), a batch with one
//! callback job, and small results a job leaves for the jobs that wait for it.
//!
//! The model is [`leaseq_core::graph`] (its docs state when a job is released and what a
//! failed parent does under each [`OnFailedParent`]); a store that offers it implements
//! [`DependencyStore`], whose calls are async: on a durable store `Ok` means committed,
//! reads can fail ([`DependencyError::Store`]). The [`MemoryStore`](crate::MemoryStore)
//! offers it on a queue without a capacity: a dependent is pushed in the same lock hold as
//! its last parent's ack, so no receiver ever sees the ack without it; its futures are
//! ready on their first poll. A store that does not implement it does not offer these
//! calls at all (a compile error, not a runtime surprise).
//!
//! Jobs the graph holds are named by [`NodeId`]; a job pushed the plain way by its
//! [`MessageId`], which [`Parent::Message`] adopts as a parent.
//!
//! ```
//! use std::time::Duration;
//! use leaseq_async::dependencies::{DependencyStore, OnFailedParent, Parent, StepState};
//! use leaseq_async::{Config, LeaseQueue, SimRuntime};
//!
//! let rt = SimRuntime::new();
//! rt.block_on({
//!     let rt = rt.clone();
//!     async move {
//!         let queue = LeaseQueue::with_runtime(rt, Config::new(Duration::from_secs(5))).unwrap();
//!         let resize = queue.push("resize").await.unwrap();
//!         let graph = queue.store();
//!         let upload = graph
//!             .push_after("upload", &[Parent::Message(resize)], OnFailedParent::Cancel)
//!             .await
//!             .unwrap();
//!         assert_eq!(graph.job_state(upload).await.unwrap(), Some(StepState::Pending));
//!
//!         let job = queue.receive().await.unwrap(); // "resize"; "upload" is not receivable
//!         graph.record_result(job.id(), b"s3://bucket/small.jpg").await.unwrap();
//!         job.ack().await.unwrap(); // releases "upload", in the same lock hold
//!
//!         let next = queue.receive().await.unwrap();
//!         assert_eq!(*next.item(), "upload");
//!         let parents = graph.parent_outcomes(next.id()).await.unwrap().unwrap();
//!         assert_eq!(parents[0].result.as_deref(), Some(&b"s3://bucket/small.jpg"[..]));
//!     }
//! });
//! ```

use std::fmt;
use std::future::Future;

pub use leaseq_core::graph::{
    BatchCounts, BatchId, BatchOn, NodeId, OnFailedParent, StepState, WorkflowId, WorkflowSpec,
    MAX_RESULT_LEN,
};
use leaseq_core::graph::{GraphError, ResultError, WorkflowError};
use leaseq_core::{MessageId, RedriveError};

use crate::store::Store;
use crate::store_error::StoreError;

/// A job another waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Parent {
    /// A job of the graph (pushed with [`DependencyStore::push_after`], a workflow's step,
    /// a batch's child or callback).
    Job(NodeId),
    /// A job pushed the plain way: adopted while it is in the queue or dead-lettered. One
    /// no longer there (acked, cancelled, purged) is finished: nothing to wait for.
    Message(MessageId),
}

impl From<NodeId> for Parent {
    fn from(node: NodeId) -> Self {
        Parent::Job(node)
    }
}

impl From<StoreError> for DependencyError {
    fn from(e: StoreError) -> Self {
        DependencyError::Store(e)
    }
}

impl From<MessageId> for Parent {
    fn from(message: MessageId) -> Self {
        Parent::Message(message)
    }
}

/// How one parent of a job stands, and what it recorded: what a released job (a batch's
/// callback: every child) reads.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParentOutcome {
    /// The parent.
    pub node: NodeId,
    /// Its state now (acked, dead-lettered, cancelled, ...).
    pub state: StepState,
    /// What it recorded with [`DependencyStore::record_result`], if anything.
    pub result: Option<Vec<u8>>,
}

/// One step of a workflow as read ([`DependencyStore::workflow_steps`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkflowStep {
    /// Its name in the spec.
    pub name: String,
    /// Its job.
    pub node: NodeId,
    /// Its state: whether a queued step is ready or running there is the queue's
    /// (its message's state).
    pub state: StepState,
}

/// Why a call of [`DependencyStore`] was refused. Nothing changed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DependencyError {
    /// The queue is closed.
    Closed,
    /// The queue has a capacity: a released dependent could find it full with no one to
    /// hand it back to, so a bounded queue does not take dependencies yet.
    Bounded,
    /// A parent message that was never pushed to this queue.
    UnknownMessage(MessageId),
    /// The graph refused (an unknown job, workflow or step, a job in the wrong state).
    Graph(GraphError),
    /// The workflow's spec is not a DAG of well-named steps.
    Workflow(WorkflowError),
    /// The result was refused (too long, or the job is not in the queue).
    Result(ResultError),
    /// A retried step's dead letter could not be redriven (it stays dead-lettered).
    Redrive(RedriveError),
    /// The store failed: the step was not made, or (see
    /// [`StoreError::is_outcome_unknown`]) it may have been.
    Store(StoreError),
}

impl fmt::Display for DependencyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DependencyError::Closed => f.write_str("the queue is closed"),
            DependencyError::Bounded => f.write_str(
                "a queue with a capacity does not take dependencies yet: build it unbounded",
            ),
            DependencyError::UnknownMessage(m) => {
                write!(f, "message {m} was never pushed to this queue")
            }
            DependencyError::Graph(e) => write!(f, "{e}"),
            DependencyError::Workflow(e) => write!(f, "{e}"),
            DependencyError::Result(e) => write!(f, "{e}"),
            DependencyError::Redrive(e) => write!(f, "{e}"),
            DependencyError::Store(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DependencyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DependencyError::Graph(e) => Some(e),
            DependencyError::Workflow(e) => Some(e),
            DependencyError::Result(e) => Some(e),
            DependencyError::Redrive(e) => Some(e),
            DependencyError::Store(e) => Some(e),
            _ => None,
        }
    }
}

/// A refused push: why, and what was to be pushed, handed back whole.
#[derive(Debug)]
#[non_exhaustive]
pub struct Refused<P> {
    /// Why.
    pub error: DependencyError,
    /// The job (the spec, the batch), as given.
    pub payload: P,
}

impl<P> fmt::Display for Refused<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not pushed: {}", self.error)
    }
}

impl<P: fmt::Debug> std::error::Error for Refused<P> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// A store that keeps jobs waiting for other jobs (see the [module docs](self)). Each call
/// is one step of the store: all of it, or (refused) none. On a durable store `Ok` means
/// the step is committed, together with whatever it released (a dependent's release is in
/// the commit of its last parent's ack); a failure to commit is
/// [`DependencyError::Store`], saying whether the step may still have been made. The
/// memory store's futures are ready on their first poll.
pub trait DependencyStore<T>: Store<T> {
    /// Pushes `item` to run once every parent is acked (or finished, as `policy` says for
    /// a failed parent). With no parent open it is pushed at once.
    fn push_after(
        &self,
        item: T,
        parents: &[Parent],
        policy: OnFailedParent,
    ) -> impl Future<Output = Result<NodeId, Refused<T>>> + Send;

    /// Pushes a workflow as one unit: every step, or (refused) none. Steps that wait for
    /// nothing are pushed at once.
    fn push_workflow(
        &self,
        spec: WorkflowSpec<T>,
    ) -> impl Future<Output = Result<WorkflowId, Refused<WorkflowSpec<T>>>> + Send;

    /// Each step of a workflow and its state, in the spec's order (`Ok(None)`: no such
    /// workflow).
    fn workflow_steps(
        &self,
        workflow: WorkflowId,
    ) -> impl Future<Output = Result<Option<Vec<WorkflowStep>>, DependencyError>> + Send;

    /// Cancels what is left of a workflow: waiting steps in the graph, queued steps in the
    /// queue (a step running now is cancelled under its lease: its ack will be stale).
    /// Returns the steps cancelled.
    fn cancel_workflow(
        &self,
        workflow: WorkflowId,
    ) -> impl Future<Output = Result<Vec<NodeId>, DependencyError>> + Send;

    /// Retries a failed step (dead-lettered: redriven; cancelled: pending again), and with
    /// it the steps its failure cancelled.
    fn retry_step(
        &self,
        workflow: WorkflowId,
        step: &str,
    ) -> impl Future<Output = Result<(), DependencyError>> + Send;

    /// Pushes `children` at once and `callback` to run once when they have all finished as
    /// `on` says; read the counts with [`batch_counts`](Self::batch_counts), and the
    /// children's outcomes from the callback with
    /// [`parent_outcomes`](Self::parent_outcomes).
    fn push_batch(
        &self,
        children: Vec<T>,
        callback: T,
        on: BatchOn,
    ) -> impl Future<Output = Result<BatchId, Refused<(Vec<T>, T)>>> + Send;

    /// A batch's counts, exact through redeliveries (`Ok(None)`: no such batch).
    fn batch_counts(
        &self,
        batch: BatchId,
    ) -> impl Future<Output = Result<Option<BatchCounts>, DependencyError>> + Send;

    /// Forgets a finished workflow (every step acked, dead-lettered or cancelled): its
    /// jobs, their messages and results go. The graph keeps a workflow until then.
    fn forget_workflow(
        &self,
        workflow: WorkflowId,
    ) -> impl Future<Output = Result<(), DependencyError>> + Send;

    /// Forgets a finished batch (every child and the callback finished), as
    /// [`forget_workflow`](Self::forget_workflow) does.
    fn forget_batch(
        &self,
        batch: BatchId,
    ) -> impl Future<Output = Result<(), DependencyError>> + Send;

    /// Records a small result (at most [`MAX_RESULT_LEN`] bytes) for the job that is
    /// `message`, while it is in the queue (before its ack), for the jobs that wait for it.
    fn record_result(
        &self,
        message: MessageId,
        result: &[u8],
    ) -> impl Future<Output = Result<(), DependencyError>> + Send;

    /// The parents of the job that is `message`, their states and results (`Ok(None)`: the
    /// message is no job of the graph).
    fn parent_outcomes(
        &self,
        message: MessageId,
    ) -> impl Future<Output = Result<Option<Vec<ParentOutcome>>, DependencyError>> + Send;

    /// A job's state (`Ok(None)`: no such job).
    fn job_state(
        &self,
        node: NodeId,
    ) -> impl Future<Output = Result<Option<StepState>, DependencyError>> + Send;

    /// The job a message is, if the graph tracks it (`Ok(None)`: it does not).
    fn job_of(
        &self,
        message: MessageId,
    ) -> impl Future<Output = Result<Option<NodeId>, DependencyError>> + Send;
}
