//! What the queue tells the graph: a released job's message, a job's fate, a redrive.

use alloc::collections::btree_map::Entry;

use super::error::GraphError;
use super::ids::NodeId;
use super::node::{Node, OnFailedParent, State};
use super::{Changes, Graph};
use crate::id::MessageId;

/// How a job left the queue, as the driver tells [`Graph::settle`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Fate {
    /// Acked.
    Acked,
    /// Dead-lettered (attempts spent, a permanent failure, an item expiry).
    DeadLettered,
    /// Cancelled (or replaced by a push with its unique key).
    Cancelled,
}

impl<T> Graph<T> {
    /// Tells the graph that a released job was pushed as `message`
    /// (see [`Changes::ready`]).
    ///
    /// Refused when the node is unknown ([`GraphError::UnknownNode`]), not released
    /// ([`GraphError::WrongState`]) or the message is already a node's
    /// ([`GraphError::MessageTaken`]).
    pub fn queued(&mut self, node: NodeId, message: MessageId) -> Result<(), GraphError> {
        let n = self
            .nodes
            .get_mut(&node)
            .ok_or(GraphError::UnknownNode(node))?;
        if n.state != State::Ready {
            return Err(GraphError::WrongState {
                node,
                state: n.step_state(),
            });
        }
        match self.by_message.entry(message) {
            Entry::Occupied(other) => Err(GraphError::MessageTaken {
                message,
                node: *other.get(),
            }),
            Entry::Vacant(slot) => {
                slot.insert(node);
                // Ready and queued are both open: nothing to tell the children, and both
                // count as open in a batch.
                n.message = Some(message);
                n.state = State::Queued(message);
                Ok(())
            }
        }
    }

    /// Adopts a job already in the queue as a node, so that jobs added after may wait for
    /// it. Returns its node (the same node if the message is adopted or released already).
    ///
    /// The driver adopts only a live job: one acked already is no parent to wait for (leave
    /// it out), one dead-lettered or cancelled is adopted and then settled.
    pub fn adopt(&mut self, message: MessageId) -> NodeId {
        if let Some(&node) = self.by_message.get(&message) {
            return node;
        }
        let id = self.next_id();
        let mut node = Node::new(None, OnFailedParent::Cancel);
        node.state = State::Queued(message);
        node.message = Some(message);
        self.nodes.insert(id, node);
        self.by_message.insert(message, id);
        id
    }

    /// Tells the graph how a message left the queue, and returns what follows: jobs
    /// released (to push now), cancelled, held.
    ///
    /// Changes nothing for a message the graph does not track, a job already acked or
    /// cancelled (an ack is final), or a fate told before: so a store may tell a fate again
    /// after a crash. A dead-lettered job may still be acked or cancelled (it was redriven
    /// and then settled).
    pub fn settle(&mut self, message: MessageId, fate: Fate) -> Changes<T> {
        let mut out = Changes::none();
        let Some(&id) = self.by_message.get(&message) else {
            return out;
        };
        let state = self.nodes[&id].state;
        let to = match (state, fate) {
            (State::Queued(m) | State::DeadLettered(m), Fate::Acked) => State::Acked(m),
            (State::Queued(m), Fate::DeadLettered) => State::DeadLettered(m),
            (State::Queued(_) | State::DeadLettered(_), Fate::Cancelled) => State::Cancelled,
            _ => return out,
        };
        if let Some(node) = self.nodes.get_mut(&id) {
            node.cancelled_by_parent = false;
        }
        self.set_state(id, to, &mut out);
        out
    }

    /// Tells the graph that a dead letter it tracks was redriven outside it (an operator's
    /// redrive): the job is open again, so the jobs it held wait again and those it
    /// cancelled are revived. Changes nothing for any other message.
    pub fn redriven(&mut self, message: MessageId) -> Changes<T> {
        let mut out = Changes::none();
        if let Some(&id) = self.by_message.get(&message) {
            if let State::DeadLettered(m) = self.nodes[&id].state {
                self.set_state(id, State::Queued(m), &mut out);
            }
        }
        out
    }
}
