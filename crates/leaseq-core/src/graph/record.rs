//! What a durable store keeps of the graph: one small record per node, and the graph
//! rebuilt from them when the store opens.
//!
//! A record is the node's own facts (parents, policy, state, message, workflow or batch,
//! result); the counters are derived, recomputed on restore from the parents' states, so
//! a store never has to keep them in step (it may keep [`NodeRecord::waiting`] to find
//! jobs to release by an index). A store writes the records a call changed in the same
//! commit as the queue's change that caused it (the parent's ack and the dependents'
//! pushes), so a crash leaves both or neither. A restore also releases what a record set
//! says is due (every parent finished): a store that lost a release is healed, not
//! stuck.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::vec::Vec;

use super::batch::{Batch, BatchCounts, BatchOn};
use super::error::GraphError;
use super::ids::{BatchId, NodeId, WorkflowId};
use super::node::{Node, OnFailedParent, State, StepState};
use super::workflow::Workflow;
use super::{Changes, Graph};
use crate::id::MessageId;

/// One node as a store keeps it ([`Graph::records`], [`Graph::restore`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct NodeRecord {
    /// The node.
    pub node: NodeId,
    /// Its parents, in the order given.
    pub parents: Vec<NodeId>,
    /// Its policy for a failed parent.
    pub policy: OnFailedParent,
    /// Its state (`Held` is kept as such; restored as pending with its failed parent).
    pub state: StepState,
    /// Cancelled because a parent failed (revived if that parent comes back).
    pub cancelled_by_parent: bool,
    /// The message it was pushed as.
    pub message: Option<MessageId>,
    /// Its workflow and step name.
    pub workflow: Option<(WorkflowId, String)>,
    /// The batch it is a child of.
    pub batch: Option<BatchId>,
    /// The batch it is the callback of.
    pub callback_of: Option<(BatchId, BatchOn)>,
    /// What it recorded.
    pub result: Option<Vec<u8>>,
    /// Parents still waited for while it is pending, as the graph counts them, else 0
    /// (derived; not read on restore).
    pub waiting: u32,
}

impl NodeRecord {
    /// A record of `node` in `state` with `policy`, no parent and nothing else (a store
    /// that reads records back sets the other fields).
    pub fn new(node: NodeId, policy: OnFailedParent, state: StepState) -> Self {
        NodeRecord {
            node,
            parents: Vec::new(),
            policy,
            state,
            cancelled_by_parent: false,
            message: None,
            workflow: None,
            batch: None,
            callback_of: None,
            result: None,
            waiting: 0,
        }
    }
}

/// A graph rebuilt ([`Graph::restore`]) and what it released on the way.
#[derive(Debug)]
#[non_exhaustive]
pub struct RestoredGraph<T> {
    /// The graph.
    pub graph: Graph<T>,
    /// Jobs whose parents had all finished, released now (push them).
    pub changes: Changes<T>,
}

impl<T> Graph<T> {
    /// Every node's record with the payload the graph holds for it, in id order.
    pub fn records(&self) -> impl Iterator<Item = (NodeRecord, Option<&T>)> + '_ {
        let callbacks: BTreeMap<NodeId, (BatchId, BatchOn)> = self
            .batches
            .iter()
            .map(|(&id, b)| (b.callback, (id, b.on)))
            .collect();
        let names: BTreeMap<NodeId, (WorkflowId, &str)> = self
            .workflows
            .iter()
            .flat_map(|(&w, wf)| wf.steps.iter().map(move |(n, id)| (*id, (w, n.as_str()))))
            .collect();
        self.nodes.iter().map(move |(id, n)| {
            let name = names.get(&id).map(|(w, s)| (*w, String::from(*s)));
            Self::record_of(id, n, name, callbacks.get(&id).copied())
        })
    }

    /// One node's record and payload (`None`: no such node), for a store that writes the
    /// records a call changed: O(steps of its workflow + batches).
    pub fn record(&self, id: NodeId) -> Option<(NodeRecord, Option<&T>)> {
        let n = self.nodes.get(&id)?;
        let name = n.workflow.and_then(|w| {
            let wf = self.workflows.get(&w)?;
            let (s, _) = wf.steps.iter().find(|(_, step)| *step == id)?;
            Some((w, s.clone()))
        });
        let callback = self
            .batches
            .iter()
            .find(|(_, b)| b.callback == id)
            .map(|(&b, batch)| (b, batch.on));
        Some(Self::record_of(id, n, name, callback))
    }

    fn record_of(
        id: NodeId,
        n: &Node<T>,
        workflow: Option<(WorkflowId, String)>,
        callback_of: Option<(BatchId, BatchOn)>,
    ) -> (NodeRecord, Option<&T>) {
        let record = NodeRecord {
            node: id,
            parents: n.parents.clone(),
            policy: n.policy,
            state: n.step_state(),
            cancelled_by_parent: n.cancelled_by_parent,
            message: n.message,
            workflow,
            batch: n.batch,
            callback_of,
            result: n.result.clone(),
            waiting: if n.state == State::Pending {
                n.waiting
            } else {
                0
            },
        };
        (record, n.payload.as_ref())
    }

    /// Rebuilds a graph from its records (any order) and the payloads it held. Refused,
    /// typed, for records that cannot be a graph: a node twice
    /// ([`GraphError::DuplicateNode`]), a parent unknown or named twice
    /// ([`GraphError::UnknownNode`], [`GraphError::DuplicateParent`]), a message twice
    /// ([`GraphError::MessageTaken`]), a waiting job without its payload or a queued one
    /// without its message ([`GraphError::WrongState`]), parents in a circle
    /// ([`GraphError::Cycle`] names a node on or behind it), ids spread wider than memory
    /// holds ([`GraphError::IdSpan`]: nodes are kept by id, a pointer per id between the
    /// first and the last).
    ///
    /// Node ids continue after the largest restored (a store that must never see an id
    /// again after [`forget_workflow`](Self::forget_workflow) keeps its own sequence).
    pub fn restore(
        records: impl IntoIterator<Item = (NodeRecord, Option<T>)>,
    ) -> Result<RestoredGraph<T>, GraphError> {
        let records: Vec<(NodeRecord, Option<T>)> = records.into_iter().collect();
        let mut g = Graph::new();
        let first = records.iter().map(|r| r.0.node).min();
        let last = records.iter().map(|r| r.0.node).max();
        if let (Some(first), Some(last)) = (first, last) {
            if g.nodes.reserve_span(first, last).is_err() {
                return Err(GraphError::IdSpan { first, last });
            }
        }
        let mut steps: BTreeMap<WorkflowId, Vec<(NodeId, String)>> = BTreeMap::new();
        for (r, payload) in records {
            if g.nodes.contains_key(&r.node) {
                return Err(GraphError::DuplicateNode(r.node));
            }
            let state = match r.state {
                StepState::Pending | StepState::Held => State::Pending,
                StepState::Ready => State::Ready,
                StepState::Queued(m) => State::Queued(m),
                StepState::Acked(m) => State::Acked(m),
                StepState::DeadLettered(m) => State::DeadLettered(m),
                StepState::Cancelled => State::Cancelled,
            };
            let bad = GraphError::WrongState {
                node: r.node,
                state: r.state,
            };
            if state == State::Pending && payload.is_none() {
                return Err(bad);
            }
            if let State::Queued(m) | State::Acked(m) | State::DeadLettered(m) = state {
                if r.message != Some(m) {
                    return Err(bad);
                }
            }
            if let Some(m) = r.message {
                if let Some(&other) = g.by_message.get(&m) {
                    return Err(GraphError::MessageTaken {
                        message: m,
                        node: other,
                    });
                }
                g.by_message.insert(m, r.node);
            }
            let mut node = Node::new(payload, r.policy);
            node.state = state;
            node.told = state.class();
            node.parents = r.parents;
            node.cancelled_by_parent = r.cancelled_by_parent && state == State::Cancelled;
            node.message = r.message;
            node.batch = r.batch;
            node.result = r.result;
            if let Some((w, name)) = r.workflow {
                node.workflow = Some(w);
                steps.entry(w).or_default().push((r.node, name));
            }
            if let Some((b, on)) = r.callback_of {
                g.batches.insert(
                    b,
                    Batch {
                        children: Vec::new(),
                        callback: r.node,
                        on,
                        counts: BatchCounts::default(),
                    },
                );
            }
            g.nodes.insert(r.node, node);
        }
        g.link()?;
        for (w, mut list) in steps {
            list.sort_unstable_by_key(|s| s.0);
            let by_name = list.iter().map(|(id, n)| (n.clone(), *id)).collect();
            let steps = list.into_iter().map(|(id, n)| (n, id)).collect();
            g.workflows.insert(w, Workflow { steps, by_name });
        }
        g.next_node = g.nodes.keys().next_back().map_or(0, |n| n.0 + 1);
        g.next_workflow = g.workflows.keys().next_back().map_or(0, |w| w.0 + 1);
        g.next_batch = g.batches.keys().next_back().map_or(0, |b| b.0 + 1);
        let mut out = Changes::none();
        let pending: Vec<NodeId> = g
            .nodes
            .iter()
            .filter(|(_, n)| n.state == State::Pending)
            .map(|(id, _)| id)
            .collect();
        for &id in &pending {
            let (waiting, failed) = g.recount(id);
            if let Some(n) = g.nodes.get_mut(&id) {
                n.waiting = waiting;
                n.failed = failed;
            }
        }
        for id in pending {
            let mut work = Vec::new();
            g.judge(id, &mut work, &mut out);
            for w in work {
                g.propagate(w, &mut out);
            }
        }
        Ok(RestoredGraph {
            graph: g,
            changes: out,
        })
    }

    /// Children lists from the parents lists, batch members and counts; refuses unknown
    /// parents and circles.
    fn link(&mut self) -> Result<(), GraphError> {
        let ids: Vec<NodeId> = self.nodes.keys().collect();
        for &id in &ids {
            self.check_parents(&self.nodes[&id].parents)?;
            for i in 0..self.nodes[&id].parents.len() {
                let p = self.nodes[&id].parents[i];
                match self.nodes.get_mut(&p) {
                    Some(parent) => parent.children.push(id),
                    None => return Err(GraphError::UnknownNode(p)),
                }
            }
            if let Some(b) = self.nodes[&id].batch {
                let state = self.nodes[&id].state;
                if let Some(batch) = self.batches.get_mut(&b) {
                    batch.children.push(id);
                    batch.counts.total += 1;
                    batch.counts.open += 1;
                }
                self.count_in_batch(b, State::Pending, state);
            }
        }
        // Kahn's algorithm over every node: what is left is on or behind a circle.
        let mut waiting: BTreeMap<NodeId, usize> = self
            .nodes
            .iter()
            .map(|(id, n)| (id, n.parents.len()))
            .collect();
        let mut ready: Vec<NodeId> = waiting.iter().filter(|e| *e.1 == 0).map(|e| *e.0).collect();
        let mut done = BTreeSet::new();
        while let Some(id) = ready.pop() {
            done.insert(id);
            for c in &self.nodes[&id].children {
                let w = waiting.get_mut(c).expect("linked above");
                *w -= 1;
                if *w == 0 {
                    ready.push(*c);
                }
            }
        }
        match ids.into_iter().find(|id| !done.contains(id)) {
            Some(id) => Err(GraphError::Cycle(id)),
            None => Ok(()),
        }
    }
}
