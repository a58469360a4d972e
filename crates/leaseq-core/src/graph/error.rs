//! Why the graph refused a call. Every refusal changes nothing.

use alloc::string::String;
use core::fmt;

use super::node::{NodeId, StepState};
use super::workflow::WorkflowId;
use crate::id::MessageId;

/// A refused call on a node, a workflow or a batch (the graph is left as it was).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GraphError {
    /// No node has this id (never added, or forgotten).
    UnknownNode(NodeId),
    /// No workflow has this id.
    UnknownWorkflow(WorkflowId),
    /// No batch has this id.
    UnknownBatch(super::BatchId),
    /// The workflow has no step of this name.
    UnknownStep(String),
    /// A parent was named twice in one add.
    DuplicateParent(NodeId),
    /// The node is not in the state the call needs (e.g. [`Graph::queued`](super::Graph::queued)
    /// on a node not released, [`Graph::retry`](super::Graph::retry) on one not failed).
    WrongState {
        /// The node.
        node: NodeId,
        /// The state it is in.
        state: StepState,
    },
    /// The message is already another node's.
    MessageTaken {
        /// The message.
        message: MessageId,
        /// The node it is.
        node: NodeId,
    },
    /// The job is in the queue: cancel it there, then tell the graph
    /// ([`Graph::settle`](super::Graph::settle) with [`Fate::Cancelled`](super::Fate::Cancelled)).
    InQueue(MessageId),
    /// A retry of a job whose parent failed and cancels it: retry that parent first.
    ParentFailed {
        /// The job.
        node: NodeId,
        /// A failed parent.
        parent: NodeId,
    },
    /// The job was cancelled in the queue, and its payload went with the queue's cancel:
    /// the graph has nothing to retry.
    PayloadGone(NodeId),
    /// Records given to [`Graph::restore`](super::Graph::restore) name this node twice.
    DuplicateNode(NodeId),
    /// Records given to [`Graph::restore`](super::Graph::restore) put this node on (or
    /// behind) a circle of parents.
    Cycle(NodeId),
    /// A workflow or batch that still has open jobs cannot be forgotten, nor a node that
    /// jobs outside it still wait for.
    Unfinished(NodeId),
}

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphError::UnknownNode(n) => write!(f, "no {n} in the graph"),
            GraphError::UnknownWorkflow(w) => write!(f, "no {w} in the graph"),
            GraphError::UnknownBatch(b) => write!(f, "no {b} in the graph"),
            GraphError::UnknownStep(s) => write!(f, "the workflow has no step named {s:?}"),
            GraphError::DuplicateParent(n) => write!(f, "{n} is named twice as a parent"),
            GraphError::WrongState { node, state } => {
                write!(f, "{node} is {state:?}, not in a state for this call")
            }
            GraphError::MessageTaken { message, node } => {
                write!(f, "message {message} is already {node}")
            }
            GraphError::InQueue(m) => write!(
                f,
                "the job is in the queue as {m}: cancel it there, then settle it as cancelled"
            ),
            GraphError::ParentFailed { node, parent } => {
                write!(
                    f,
                    "{node} is cancelled by its failed parent {parent}: retry that first"
                )
            }
            GraphError::PayloadGone(n) => {
                write!(
                    f,
                    "{n} was cancelled in the queue; its payload is gone, push it anew"
                )
            }
            GraphError::DuplicateNode(n) => write!(f, "the records name {n} twice"),
            GraphError::Cycle(n) => write!(f, "the records put {n} on a circle of parents"),
            GraphError::Unfinished(n) => write!(f, "{n} or a job waiting for it is unfinished"),
        }
    }
}

impl core::error::Error for GraphError {}

/// A refused [`Graph::add`](super::Graph::add): why, and the payload handed back.
#[derive(Debug, PartialEq, Eq)]
pub struct AddError<T> {
    /// Why.
    pub error: GraphError,
    /// The payload, unused.
    pub payload: T,
}

impl<T> fmt::Display for AddError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "job not added: {}", self.error)
    }
}

impl<T: fmt::Debug> core::error::Error for AddError<T> {}

/// Why a workflow was refused (nothing of it was added).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkflowError {
    /// A workflow needs at least one step.
    Empty,
    /// A step's name is empty or longer than
    /// [`WorkflowSpec::MAX_NAME_LEN`](super::WorkflowSpec::MAX_NAME_LEN) bytes.
    BadName(String),
    /// Two steps have this name.
    DuplicateStep(String),
    /// A step names a parent twice.
    DuplicateParent {
        /// The step.
        step: String,
        /// The parent named twice.
        parent: String,
    },
    /// A step waits for a step the workflow does not have.
    UnknownParent {
        /// The step.
        step: String,
        /// The name it waits for.
        parent: String,
    },
    /// The steps wait for each other in a circle (a step waiting for itself included):
    /// the steps on one such circle, in order, each waiting for the next... the last for
    /// the first.
    Cycle(alloc::vec::Vec<String>),
}

impl fmt::Display for WorkflowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkflowError::Empty => f.write_str("a workflow needs at least one step"),
            WorkflowError::BadName(n) => write!(
                f,
                "step name {n:?} must be 1 to {} bytes",
                super::WorkflowSpec::<()>::MAX_NAME_LEN
            ),
            WorkflowError::DuplicateStep(n) => write!(f, "two steps are named {n:?}"),
            WorkflowError::DuplicateParent { step, parent } => {
                write!(f, "step {step:?} names {parent:?} twice")
            }
            WorkflowError::UnknownParent { step, parent } => {
                write!(f, "step {step:?} waits for {parent:?}, which is not a step")
            }
            WorkflowError::Cycle(steps) => {
                write!(
                    f,
                    "the steps wait for each other in a circle: {}",
                    steps.join(" -> ")
                )
            }
        }
    }
}

impl core::error::Error for WorkflowError {}

/// A refused [`Graph::record_result`](super::Graph::record_result); nothing recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResultError {
    /// The graph does not track this message.
    Untracked(MessageId),
    /// The job is not in the queue any more (a result is recorded before the ack).
    NotQueued(MessageId),
    /// Longer than [`MAX_RESULT_LEN`](super::MAX_RESULT_LEN) bytes.
    TooLong {
        /// Its length.
        len: usize,
    },
}

impl fmt::Display for ResultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResultError::Untracked(m) => write!(f, "message {m} is not a job of the graph"),
            ResultError::NotQueued(m) => {
                write!(f, "message {m} is finished; record a result before the ack")
            }
            ResultError::TooLong { len } => write!(
                f,
                "a result of {len} bytes is over the {} allowed: record where the output is",
                super::MAX_RESULT_LEN
            ),
        }
    }
}

impl core::error::Error for ResultError {}

/// A broken invariant found by [`Graph::check_invariants`](super::Graph::check_invariants):
/// a bug in the graph, never the caller's doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvariantError {
    /// The node where it was found, if one.
    pub node: Option<NodeId>,
    /// What is wrong.
    pub law: &'static str,
}

impl fmt::Display for InvariantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.node {
            Some(n) => write!(f, "graph invariant broken at {n}: {}", self.law),
            None => write!(f, "graph invariant broken: {}", self.law),
        }
    }
}

impl core::error::Error for InvariantError {}
