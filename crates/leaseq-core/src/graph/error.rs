//! Why the graph refused a call. Every refusal changes nothing.

use alloc::string::String;
use core::fmt;

use super::ids::{BatchId, NodeId, WorkflowId};
use super::node::StepState;
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
    UnknownBatch(BatchId),
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
    /// Records given to [`Graph::restore`](super::Graph::restore) whose ids spread wider
    /// than memory holds (a slot per id from the first to the last).
    IdSpan {
        /// The smallest id.
        first: NodeId,
        /// The largest id.
        last: NodeId,
    },
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
            GraphError::IdSpan { first, last } => {
                write!(
                    f,
                    "the records' ids, {first} to {last}, spread wider than memory holds"
                )
            }
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
