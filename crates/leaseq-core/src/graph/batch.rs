//! Batches: many jobs and one callback job released once when all have finished, with the
//! exact count of their outcomes.
//!
//! A batch is jobs (its children) and a callback that waits for all of them: with
//! [`BatchOn::Success`] its policy is [`OnFailedParent::Hold`] (it runs when every child is
//! acked; a child that fails holds it until the child is brought back and acked, or an
//! operator releases or cancels it), with [`BatchOn::Complete`] it is
//! [`OnFailedParent::Run`] (it runs once every child is acked, dead-lettered or
//! cancelled). So the callback is released once, by the rules of any job.
//!
//! The counts ([`BatchCounts`]) follow each child's state in the graph: a redelivery is no
//! outcome (the graph does not hear of it), a fate told twice is counted once, and a dead
//! letter redriven and acked moves from `dead_lettered` to `acked`. They are kept as
//! states change, O(1) per change, so reading them is O(1) however large the batch.

use alloc::vec::Vec;

use super::error::GraphError;
use super::ids::{BatchId, NodeId};
use super::node::{Node, OnFailedParent, State, StepState};
use super::{Changes, Graph};

/// When a batch's callback runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum BatchOn {
    /// When every child is acked (held while one is failed).
    Success,
    /// When every child has finished, in any way.
    Complete,
}

impl BatchOn {
    const fn policy(self) -> OnFailedParent {
        match self {
            BatchOn::Success => OnFailedParent::Hold,
            BatchOn::Complete => OnFailedParent::Run,
        }
    }
}

/// How a batch's children stand: each child in exactly one count, so they sum to `total`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct BatchCounts {
    /// Children in the batch.
    pub total: u64,
    /// Not finished (waiting, released, in the queue).
    pub open: u64,
    /// Acked.
    pub acked: u64,
    /// Dead-lettered.
    pub dead_lettered: u64,
    /// Cancelled.
    pub cancelled: u64,
}

impl BatchCounts {
    fn slot(&mut self, state: State) -> &mut u64 {
        match state {
            State::Pending | State::Ready | State::Queued(_) => &mut self.open,
            State::Acked(_) => &mut self.acked,
            State::DeadLettered(_) => &mut self.dead_lettered,
            State::Cancelled => &mut self.cancelled,
        }
    }
}

/// A batch: its children, its callback and their counts.
#[derive(Debug)]
pub(super) struct Batch {
    pub(super) children: Vec<NodeId>,
    pub(super) callback: NodeId,
    pub(super) on: BatchOn,
    pub(super) counts: BatchCounts,
}

/// A batch added ([`Graph::add_batch`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct AddedBatch<T> {
    /// The batch.
    pub batch: BatchId,
    /// Its children's nodes, in the order given.
    pub children: Vec<NodeId>,
    /// Its callback's node.
    pub callback: NodeId,
    /// The children released (every one), and the callback too if there is no child.
    pub changes: Changes<T>,
}

impl<T> Graph<T> {
    /// Adds a batch: `children`, released at once, and `callback`, released once when they
    /// have all finished as `on` says. A batch of no child releases its callback at once.
    pub fn add_batch(
        &mut self,
        children: impl IntoIterator<Item = T>,
        callback: T,
        on: BatchOn,
    ) -> AddedBatch<T> {
        let batch = BatchId(self.next_batch);
        self.next_batch += 1;
        let callback_id = self.next_id();
        self.batches.insert(
            batch,
            Batch {
                children: Vec::new(),
                callback: callback_id,
                on,
                counts: BatchCounts::default(),
            },
        );
        let mut out = Changes::none();
        let mut ids = Vec::new();
        for payload in children {
            let id = self.next_id();
            let mut node = Node::new(Some(payload), OnFailedParent::Cancel);
            node.batch = Some(batch);
            self.insert(id, node, &[], &mut out);
            ids.push(id);
        }
        self.insert(
            callback_id,
            Node::new(Some(callback), on.policy()),
            &ids,
            &mut out,
        );
        if let Some(b) = self.batches.get_mut(&batch) {
            b.children.clone_from(&ids);
        }
        AddedBatch {
            batch,
            children: ids,
            callback: callback_id,
            changes: out,
        }
    }

    /// The batches the graph holds with ids after `after` (`None`: from the first), in id
    /// order (for operators: page with the last id listed).
    pub fn batch_ids(&self, after: Option<BatchId>) -> impl Iterator<Item = BatchId> + '_ {
        let start = match after {
            Some(a) if a.0 == u64::MAX => None,
            Some(a) => Some(BatchId(a.0 + 1)),
            None => Some(BatchId(0)),
        };
        start
            .into_iter()
            .flat_map(move |s| self.batches.range(s..).map(|(id, _)| *id))
    }

    /// The batch's counts. O(1).
    pub fn batch_counts(&self, batch: BatchId) -> Option<BatchCounts> {
        self.batches.get(&batch).map(|b| b.counts)
    }

    /// The batch's callback node and when it runs.
    pub fn batch_callback(&self, batch: BatchId) -> Option<(NodeId, BatchOn)> {
        self.batches.get(&batch).map(|b| (b.callback, b.on))
    }

    /// Each child and its state, in the order given: what the callback reads (with
    /// [`parent_results`](Self::parent_results) for what they recorded).
    pub fn batch_outcomes(
        &self,
        batch: BatchId,
    ) -> Option<impl Iterator<Item = (NodeId, StepState)> + '_> {
        let b = self.batches.get(&batch)?;
        Some(
            b.children
                .iter()
                .filter_map(|c| Some((*c, self.nodes.get(c)?.step_state()))),
        )
    }

    /// Forgets a finished batch (every child and the callback acked, dead-lettered or
    /// cancelled): its nodes, their messages and results go. Refused with
    /// [`GraphError::Unfinished`] naming a job otherwise,
    /// [`GraphError::UnknownBatch`] for no such batch.
    pub fn forget_batch(&mut self, batch: BatchId) -> Result<(), GraphError> {
        let Some(b) = self.batches.get(&batch) else {
            return Err(GraphError::UnknownBatch(batch));
        };
        let mut ids = b.children.clone();
        ids.push(b.callback);
        self.forget_nodes(&ids)?;
        self.batches.remove(&batch);
        Ok(())
    }

    /// A new child counted (open).
    pub(super) fn count_new_in_batch(&mut self, batch: BatchId) {
        if let Some(b) = self.batches.get_mut(&batch) {
            b.counts.total += 1;
            b.counts.open += 1;
        }
    }

    /// A child moved from `from` to `to`.
    pub(super) fn count_in_batch(&mut self, batch: BatchId, from: State, to: State) {
        if let Some(b) = self.batches.get_mut(&batch) {
            *b.counts.slot(from) -= 1;
            *b.counts.slot(to) += 1;
        }
    }

    /// Recounts a batch from its children's states (for `check_invariants`).
    pub(super) fn recount_batch(&self, batch: &Batch) -> BatchCounts {
        let mut c = BatchCounts::default();
        for child in &batch.children {
            if let Some(n) = self.nodes.get(child) {
                c.total += 1;
                *c.slot(n.state) += 1;
            }
        }
        c
    }
}
