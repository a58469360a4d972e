//! `check_invariants`: every count and link recomputed from the nodes themselves.

use super::error::InvariantError;
use super::ids::NodeId;
use super::node::{OnFailedParent, State};
use super::Graph;

impl<T> Graph<T> {
    /// Recomputes every counter and link and compares: a pending node's counters against
    /// its parents, each node's told class against its state, the message index, the
    /// parent and child lists against each other, each batch's counts. O(nodes + edges ·
    /// log n): for tests and debugging.
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        let fail = |node: Option<NodeId>, law| Err(InvariantError { node, law });
        for (id, n) in self.nodes.iter() {
            if n.told != n.state.class() {
                return fail(Some(id), "children not told the node's class");
            }
            if let State::Queued(m) | State::Acked(m) | State::DeadLettered(m) = n.state {
                if self.by_message.get(&m) != Some(&id) || n.message != Some(m) {
                    return fail(
                        Some(id),
                        "queued or finished job missing from the message index",
                    );
                }
            }
            for p in &n.parents {
                match self.nodes.get(p) {
                    Some(parent) if parent.children.contains(&id) => {}
                    _ => return fail(Some(id), "a parent does not list the node as its child"),
                }
            }
            for c in &n.children {
                match self.nodes.get(c) {
                    Some(child) if child.parents.contains(&id) => {}
                    _ => return fail(Some(id), "a child does not list the node as its parent"),
                }
            }
            if n.state == State::Pending {
                if n.payload.is_none() {
                    return fail(Some(id), "pending without its payload");
                }
                if (n.waiting, n.failed) != self.recount(id) {
                    return fail(Some(id), "counters differ from the parents' states");
                }
                if n.waiting == 0 {
                    return fail(Some(id), "pending with nothing to wait for");
                }
                if n.policy == OnFailedParent::Cancel && n.failed > 0 {
                    return fail(Some(id), "pending with a failed parent that cancels it");
                }
            }
            if n.cancelled_by_parent && n.state != State::Cancelled {
                return fail(Some(id), "cancelled by a parent yet not cancelled");
            }
        }
        for (m, id) in &self.by_message {
            let Some(n) = self.nodes.get(id) else {
                return fail(Some(*id), "message index names a missing node");
            };
            match n.state {
                State::Queued(x) | State::Acked(x) | State::DeadLettered(x) if x == *m => {}
                State::Cancelled if n.message == Some(*m) => {}
                _ => return fail(Some(*id), "message index disagrees with the node's state"),
            }
        }
        for b in self.batches.values() {
            if self.recount_batch(b) != b.counts {
                return fail(
                    Some(b.callback),
                    "batch counts differ from the children's states",
                );
            }
        }
        Ok(())
    }
}
