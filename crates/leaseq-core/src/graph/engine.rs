//! The one place a node's state changes reach the nodes that wait for it.
//!
//! A waiting node's two counters (`waiting`, `failed`) are a sum over its parents of
//! [`OnFailedParent::weight`] of each parent's **propagated** class (`Node::told`, the
//! class its children were last told). A state change is immediate; telling the children
//! is queued on a work list and applied in turn, so that a node changed twice before its
//! turn is told once, by the difference, and a node revived in between (its counters
//! recomputed from the propagated classes) is never counted twice.
//!
//! Each told child is then judged: a pending child with a failed parent and the `Cancel`
//! policy is cancelled (and its children told in turn); one with nothing left to wait for
//! is released, its payload moved out (so a node is released at most once: only a pending
//! node is released, and a node is pending only when added or when revived from a
//! cancellation that found it pending); a child cancelled because of a parent that is no
//! longer failed is revived when no other parent cancels it.

use alloc::vec::Vec;

use super::ids::NodeId;
use super::node::{Class, OnFailedParent, State};
use super::{Changes, Graph};

impl<T> Graph<T> {
    /// Sets `id`'s state (counted in its batch) and tells its children, and theirs, what
    /// follows; what the store must do is added to `out`.
    pub(super) fn set_state(&mut self, id: NodeId, to: State, out: &mut Changes<T>) {
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        let from = node.state;
        if from == to {
            return;
        }
        node.state = to;
        if let Some(batch) = node.batch {
            self.count_in_batch(batch, from, to);
        }
        self.propagate(id, out);
    }

    /// Tells the children of `start` (and, in turn, of every node that changes class on
    /// the way) their parent's new class.
    pub(super) fn propagate(&mut self, start: NodeId, out: &mut Changes<T>) {
        // The work list allocates only when a child changes class in turn.
        let mut work = Vec::new();
        let mut next = Some(start);
        while let Some(id) = next.take().or_else(|| work.pop()) {
            let Some(node) = self.nodes.get_mut(&id) else {
                continue;
            };
            let (was, now) = (node.told, node.state.class());
            if was == now {
                continue;
            }
            node.told = now;
            // Telling a child reads the child and its parents' told classes, never this
            // node's children list: lent out meanwhile, one lookup instead of one per child.
            let children = core::mem::take(&mut node.children);
            for &child in &children {
                self.tell(child, was, now, &mut work, out);
            }
            if let Some(node) = self.nodes.get_mut(&id) {
                node.children = children;
            }
        }
    }

    /// One child told that a parent moved from class `was` to `now`.
    fn tell(
        &mut self,
        id: NodeId,
        was: Class,
        now: Class,
        work: &mut Vec<NodeId>,
        out: &mut Changes<T>,
    ) {
        let Some(child) = self.nodes.get_mut(&id) else {
            return;
        };
        match child.state {
            State::Pending => {
                let (w0, f0) = child.policy.weight(was);
                let (w1, f1) = child.policy.weight(now);
                let held = child.failed > 0;
                // Added first: the parent's old weight is in the counters.
                child.waiting = child.waiting + w1 - w0;
                child.failed = child.failed + f1 - f0;
                if !held && child.failed > 0 && child.policy == OnFailedParent::Hold {
                    out.held.push(id);
                }
                self.judge(id, work, out);
            }
            State::Cancelled if child.cancelled_by_parent && was == Class::Failed => {
                let (waiting, failed) = self.recount(id);
                let child = self.nodes.get_mut(&id).expect("looked up above");
                if child.policy == OnFailedParent::Cancel && failed > 0 {
                    return;
                }
                child.state = State::Pending;
                child.cancelled_by_parent = false;
                child.waiting = waiting;
                child.failed = failed;
                if let Some(batch) = child.batch {
                    self.count_in_batch(batch, State::Cancelled, State::Pending);
                }
                out.revived.push(id);
                work.push(id);
                self.judge(id, work, out);
            }
            _ => {}
        }
    }

    /// A pending node after its counters moved: cancelled, released or left waiting.
    pub(super) fn judge(&mut self, id: NodeId, work: &mut Vec<NodeId>, out: &mut Changes<T>) {
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        if node.state != State::Pending {
            return;
        }
        let to = if node.policy == OnFailedParent::Cancel && node.failed > 0 {
            node.cancelled_by_parent = true;
            out.cancelled.push(id);
            work.push(id);
            State::Cancelled
        } else if node.waiting == 0 {
            if let Some(payload) = node.payload.take() {
                out.ready.push((id, payload));
            }
            State::Ready
        } else {
            return;
        };
        node.state = to;
        if let Some(batch) = node.batch {
            self.count_in_batch(batch, State::Pending, to);
        }
    }

    /// `id`'s counters computed afresh from its parents' propagated classes.
    pub(super) fn recount(&self, id: NodeId) -> (u32, u32) {
        let Some(node) = self.nodes.get(&id) else {
            return (0, 0);
        };
        node.parents
            .iter()
            .filter_map(|p| self.nodes.get(p))
            .map(|p| node.policy.weight(p.told))
            .fold((0, 0), |(w, f), (dw, df)| (w + dw, f + df))
    }
}
