//! Adding a job that waits for its parents.

use alloc::vec::Vec;

use super::error::{AddError, GraphError};
use super::ids::NodeId;
use super::node::{Node, OnFailedParent, State};
use super::{Changes, Graph};

/// A job added ([`Graph::add`]): its node, and what followed (its payload in
/// [`Changes::ready`] when no parent is open).
#[derive(Debug)]
#[non_exhaustive]
pub struct Added<T> {
    /// The new node.
    pub node: NodeId,
    /// What to apply: the job itself released at once, or cancelled (a parent failed and
    /// the policy is `Cancel`).
    pub changes: Changes<T>,
}

impl<T> Graph<T> {
    /// Adds a job that waits for `parents` (nodes of this graph: jobs added before, or
    /// adopted with [`adopt`](Self::adopt)), with its policy for a failed parent.
    ///
    /// With no open parent it is released at once (its payload in the changes' `ready`);
    /// a failed parent applies `policy` at once. Refused, the payload handed back, when a
    /// parent is unknown or named twice.
    pub fn add(
        &mut self,
        payload: T,
        parents: &[NodeId],
        policy: OnFailedParent,
    ) -> Result<Added<T>, AddError<T>> {
        if let Err(error) = self.check_parents(parents) {
            return Err(AddError { error, payload });
        }
        let id = self.next_id();
        let mut out = Changes::none();
        self.insert(id, Node::new(Some(payload), policy), parents, &mut out);
        Ok(Added {
            node: id,
            changes: out,
        })
    }

    /// Every parent known, none twice.
    pub(super) fn check_parents(&self, parents: &[NodeId]) -> Result<(), GraphError> {
        if let Some(&p) = parents.iter().find(|p| !self.nodes.contains_key(p)) {
            return Err(GraphError::UnknownNode(p));
        }
        let mut sorted: Vec<NodeId> = parents.to_vec();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(GraphError::DuplicateParent(w[0]));
        }
        Ok(())
    }

    /// Links a new pending node under checked `parents` and judges it.
    pub(super) fn insert(
        &mut self,
        id: NodeId,
        mut node: Node<T>,
        parents: &[NodeId],
        out: &mut Changes<T>,
    ) {
        debug_assert_eq!(node.state, State::Pending);
        node.parents = parents.to_vec();
        // Linked and counted in one pass: one lookup per parent.
        let (mut waiting, mut failed) = (0, 0);
        for p in parents {
            if let Some(parent) = self.nodes.get_mut(p) {
                parent.children.push(id);
                let (w, f) = node.policy.weight(parent.told);
                waiting += w;
                failed += f;
            }
        }
        node.waiting = waiting;
        node.failed = failed;
        if failed > 0 && node.policy == OnFailedParent::Hold {
            out.held.push(id);
        }
        let batch = node.batch;
        self.nodes.insert(id, node);
        if let Some(b) = batch {
            self.count_new_in_batch(b);
        }
        let mut work = Vec::new();
        self.judge(id, &mut work, out);
        for w in work {
            self.propagate(w, out);
        }
    }
}
