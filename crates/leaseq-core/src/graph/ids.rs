//! The graph's numbers: its nodes, workflows and batches, each counted from 0 in the
//! order they were added.

use core::fmt;

/// A job in a [`Graph`](super::Graph), numbered by the graph in the order it was added
/// (its own numbers: a job waiting for its parents is not in the queue, so it has no
/// [`MessageId`](crate::MessageId) yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct NodeId(pub(crate) u64);

impl NodeId {
    /// The node numbered `n` (for a store that restores a graph it kept).
    pub const fn new(n: u64) -> Self {
        NodeId(n)
    }

    /// Its number.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node {}", self.0)
    }
}

/// A workflow in a [`Graph`](super::Graph), numbered in the order workflows were added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct WorkflowId(pub(crate) u64);

impl WorkflowId {
    /// The workflow numbered `n` (for a store that keeps the graph in its own tables).
    pub const fn new(n: u64) -> Self {
        WorkflowId(n)
    }

    /// Its number.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for WorkflowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "workflow {}", self.0)
    }
}

/// A batch in a [`Graph`](super::Graph), numbered in the order batches were added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct BatchId(pub(crate) u64);

impl BatchId {
    /// The batch numbered `n` (for a store that keeps the graph in its own tables).
    pub const fn new(n: u64) -> Self {
        BatchId(n)
    }

    /// Its number.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for BatchId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "batch {}", self.0)
    }
}
