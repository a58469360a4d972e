//! Jobs that wait for other jobs: dependencies, workflows (a DAG of named steps pushed as
//! one unit), batches with a completion callback, and small results handed to dependents.
//!
//! A [`Graph`] is a state machine beside a [`Queue`](crate::Queue), not inside it: a job
//! that waits for its parents is not receivable, so it is not in the queue at all. The
//! graph keeps its payload and its parents and, told the outcome of each parent, hands the
//! payload back **exactly once**, when nothing is left to wait for; the store's driver
//! pushes it into the queue in the same step (the same lock, or the same transaction) as
//! the parent's settle, and names the message it became ([`Graph::queued`]). Kept apart so
//! that jobs without dependencies cost the queue nothing: the driver asks
//! [`Graph::tracks`] (an empty-map check while no graph is in use) after an ack, a dead
//! letter or a cancel.
//!
//! # Driving
//!
//! 1. **Add** jobs with their parents ([`Graph::add`]), a workflow
//!    ([`Graph::add_workflow`]) or a batch ([`Graph::add_batch`]); a parent that is a job
//!    already in the queue is first [adopted](Graph::adopt). Each returns the [`Changes`]
//!    to apply: payloads released at once (no open parent) to push.
//! 2. **Push** each released payload and tell the graph its message ([`Graph::queued`]).
//! 3. **Settle**: after the queue acks, dead-letters (by a nack, a lease expiry, an item
//!    expiry: see [`Queue::note_dead_letters`](crate::Queue::note_dead_letters)) or cancels
//!    a message the graph tracks, call [`Graph::settle`] with its [`Fate`] and apply the
//!    [`Changes`]. Nacks, expiries and redeliveries that leave the job in the queue are
//!    not outcomes: the graph does not hear of them. Telling a fate twice changes nothing,
//!    so a store that replays its log after a crash may tell it again.
//! 4. A dead letter redriven outside the graph is told with [`Graph::redriven`].
//!
//! There is no `now`: nothing in the graph changes by itself (no timer, no expiry), only
//! by these calls, so it needs no clock and no wake-up. Delays and expiries of released
//! jobs are the queue's.
//!
//! # When a job is released
//!
//! A job's parents are each **open** (pending, ready or in the queue), **acked**, or
//! **failed** (dead-lettered or cancelled). A job waits while a parent is open. A failed
//! parent does what the job's [`OnFailedParent`] says: `Cancel` cancels the job (and its
//! dependents, each by its own policy), `Run` counts the parent as finished, `Hold` keeps
//! the job waiting until an operator releases it ([`Graph::release_held`]) or the parent is
//! brought back and acked. A job is released when no parent is open and none holds or
//! cancels it: with `Cancel` or `Hold`, when every parent is acked. So a job is never
//! released before its last parent's ack (with `Run`, before every parent has finished),
//! and never twice: only a pending job is released, its payload moved out.
//!
//! A failed parent that comes back (a redrive, [`Graph::retry`]) is open again: jobs it
//! holds wait again, and jobs it cancelled are revived (pending again, their payload was
//! kept) unless another failed parent still cancels them.
//!
//! # Results
//!
//! A job may record a small result (at most [`MAX_RESULT_LEN`] bytes) while it is in the
//! queue ([`Graph::record_result`]), before its ack; its dependents read their parents'
//! results ([`Graph::parent_results`]). Small on purpose, like a checkpoint: a result
//! names where the output is (a key, a path, a count), it is not the output.
//!
//! # Cost
//!
//! Nodes are kept by id in a deque of boxed slots (a lookup is an index; a forgotten node
//! leaves a pointer-sized hole until the nodes before it go too); messages, workflows and
//! batches in `BTreeMap`s. Adding a job costs O(parents); a parent's outcome O(log n) to
//! find its node and O(children), plus what it releases or cancels in turn; a batch
//! child's outcome O(1) in the batch's counts. Measured (BENCHMARKS.md, issue 33): about
//! 3,000 instructions a batch child and 4,000 a link of a chain pay beside the queue's own
//! 226, and 3 a job outside any graph (the `tracks` check). Workflows and batches are kept
//! until forgotten ([`Graph::forget_workflow`], [`Graph::forget_batch`]); a job added on its
//! own stays for now.
//!
//! ```
//! use leaseq_core::graph::{Fate, Graph, OnFailedParent};
//! use leaseq_core::MessageId;
//!
//! let mut graph = Graph::new();
//! let resize = graph.add("resize", &[], OnFailedParent::Cancel).unwrap();
//! assert_eq!(resize.changes.ready, [(resize.node, "resize")]); // no parent: released
//! graph.queued(resize.node, MessageId::new(7)).unwrap(); // pushed as #7
//! let upload = graph.add("upload", &[resize.node], OnFailedParent::Cancel).unwrap();
//! assert!(upload.changes.ready.is_empty()); // waits for #7
//! let acked = graph.settle(MessageId::new(7), Fate::Acked);
//! assert_eq!(acked.ready[0].1, "upload"); // released by the ack, once
//! assert!(graph.settle(MessageId::new(7), Fate::Acked).ready.is_empty());
//! ```

mod add;
mod batch;
mod checked;
mod engine;
mod error;
mod ids;
mod invariants;
mod node;
mod nodes;
mod record;
mod result;
mod retry;
mod settle;
mod workflow;
mod workflow_spec;

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

pub use add::Added;
pub use batch::{AddedBatch, BatchCounts, BatchOn};
pub use checked::CheckedStep;
pub use error::{AddError, GraphError, InvariantError};
pub use ids::{BatchId, NodeId, WorkflowId};
pub use node::{OnFailedParent, StepState};
pub use record::{NodeRecord, RestoredGraph};
pub use result::{ResultError, MAX_RESULT_LEN};
pub use retry::Retried;
pub use settle::Fate;
pub use workflow::{AddedWorkflow, CancelledWorkflow};
pub use workflow_spec::{WorkflowError, WorkflowRefused, WorkflowSpec};

use batch::Batch;
use node::Node;
use nodes::Nodes;
use workflow::Workflow;

/// The dependency graph: jobs waiting for their parents, workflows and batches. See the
/// [module docs](self) for how a store drives it.
#[derive(Debug)]
pub struct Graph<T> {
    nodes: Nodes<T>,
    /// The node of each message the graph tracks (queued or finished in the queue).
    by_message: BTreeMap<crate::MessageId, NodeId>,
    next_node: u64,
    workflows: BTreeMap<WorkflowId, Workflow>,
    next_workflow: u64,
    batches: BTreeMap<BatchId, Batch>,
    next_batch: u64,
}

/// What a call changed, for the store to apply in the same step: payloads to push now,
/// and what was cancelled, held or revived (for its records and events).
#[derive(Debug)]
#[non_exhaustive]
pub struct Changes<T> {
    /// Jobs released, with their payloads, in the order they were released: push each and
    /// call [`Graph::queued`] with its message.
    pub ready: Vec<(NodeId, T)>,
    /// Pending jobs cancelled because a parent failed (their payloads stay in the graph
    /// for a retry).
    pub cancelled: Vec<NodeId>,
    /// Pending jobs now held for an operator (a parent failed; policy `Hold`).
    pub held: Vec<NodeId>,
    /// Jobs cancelled earlier because of a parent that came back: pending again.
    pub revived: Vec<NodeId>,
}

impl<T> Changes<T> {
    pub(crate) const fn none() -> Self {
        Changes {
            ready: Vec::new(),
            cancelled: Vec::new(),
            held: Vec::new(),
            revived: Vec::new(),
        }
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.ready.is_empty()
            && self.cancelled.is_empty()
            && self.held.is_empty()
            && self.revived.is_empty()
    }
}

impl<T> Default for Graph<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Graph<T> {
    /// An empty graph.
    pub const fn new() -> Self {
        Graph {
            nodes: Nodes::new(),
            by_message: BTreeMap::new(),
            next_node: 0,
            workflows: BTreeMap::new(),
            next_workflow: 0,
            batches: BTreeMap::new(),
            next_batch: 0,
        }
    }

    /// Whether the graph tracks this message (a job it released, or one it adopted): the
    /// driver's check after an ack, a dead letter or a cancel. O(1) while the graph tracks
    /// nothing.
    #[inline]
    pub fn tracks(&self, message: crate::MessageId) -> bool {
        !self.by_message.is_empty() && self.by_message.contains_key(&message)
    }

    /// The node a message is, if the graph tracks it.
    pub fn node_of(&self, message: crate::MessageId) -> Option<NodeId> {
        self.by_message.get(&message).copied()
    }

    /// A node's state, if the graph has it.
    pub fn state(&self, node: NodeId) -> Option<StepState> {
        self.nodes.get(&node).map(Node::step_state)
    }

    /// A node's parents, in the order given.
    pub fn parents(&self, node: NodeId) -> Option<&[NodeId]> {
        self.nodes.get(&node).map(|n| n.parents.as_slice())
    }

    /// The nodes that wait for this one, in the order they were added.
    pub fn children(&self, node: NodeId) -> Option<&[NodeId]> {
        self.nodes.get(&node).map(|n| n.children.as_slice())
    }

    /// The node's policy for a failed parent.
    pub fn policy(&self, node: NodeId) -> Option<OnFailedParent> {
        self.nodes.get(&node).map(|n| n.policy)
    }

    /// How many nodes the graph holds.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph holds no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Every node and its state, in id order (for operators and checks).
    pub fn nodes(&self) -> impl Iterator<Item = (NodeId, StepState)> + '_ {
        self.nodes.iter().map(|(id, n)| (id, n.step_state()))
    }

    /// A new node id.
    fn next_id(&mut self) -> NodeId {
        let id = NodeId(self.next_node);
        self.next_node += 1;
        id
    }
}
