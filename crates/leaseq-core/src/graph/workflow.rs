//! Workflows in the graph: a checked spec added as one unit, its steps read by name,
//! cancelled as a whole, forgotten when finished.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::vec::Vec;

use super::error::GraphError;
use super::ids::{NodeId, WorkflowId};
use super::node::{Node, State, StepState};
use super::workflow_spec::{WorkflowRefused, WorkflowSpec};
use super::{Changes, Graph};
use crate::id::MessageId;

/// A workflow: its steps' names and nodes, in the order the spec gave them.
#[derive(Debug)]
pub(super) struct Workflow {
    pub(super) steps: Vec<(String, NodeId)>,
    pub(super) by_name: BTreeMap<String, NodeId>,
}

/// A workflow added ([`Graph::add_workflow`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct AddedWorkflow<T> {
    /// The workflow.
    pub workflow: WorkflowId,
    /// Its steps that wait for nothing, released.
    pub changes: Changes<T>,
}

/// A workflow cancelled ([`Graph::cancel_workflow`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct CancelledWorkflow<T> {
    /// Steps cancelled in the graph (they were waiting, held or released).
    pub cancelled: Vec<NodeId>,
    /// Steps in the queue: cancel each there ([`Queue::cancel`](crate::Queue::cancel) or
    /// `cancel_leased`), then tell the graph ([`Graph::settle`] with
    /// [`Fate::Cancelled`](super::Fate::Cancelled)).
    pub in_queue: Vec<MessageId>,
    /// What followed for jobs outside the workflow that wait for its steps.
    pub changes: Changes<T>,
}

impl<T> Graph<T> {
    /// Adds a workflow as one unit: every step, or (refused) none, the spec handed back.
    /// Steps that wait for nothing are released at once.
    pub fn add_workflow(
        &mut self,
        spec: WorkflowSpec<T>,
    ) -> Result<AddedWorkflow<T>, WorkflowRefused<T>> {
        let (parents, order) = match spec.check() {
            Ok(checked) => checked,
            Err(error) => return Err(WorkflowRefused { error, spec }),
        };
        let workflow = WorkflowId(self.next_workflow);
        self.next_workflow += 1;
        let ids: Vec<NodeId> = (0..spec.steps.len()).map(|_| self.next_id()).collect();
        let default = spec.policy;
        let mut payloads: Vec<Option<T>> = Vec::with_capacity(spec.steps.len());
        let mut steps = Vec::with_capacity(spec.steps.len());
        let mut by_name = BTreeMap::new();
        let mut policies = Vec::with_capacity(spec.steps.len());
        for (s, &id) in spec.steps.into_iter().zip(&ids) {
            by_name.insert(s.name.clone(), id);
            steps.push((s.name, id));
            policies.push(s.policy.unwrap_or(default));
            payloads.push(Some(s.payload));
        }
        self.workflows.insert(workflow, Workflow { steps, by_name });
        let mut out = Changes::none();
        for i in order {
            let mut node = Node::new(payloads[i].take(), policies[i]);
            node.workflow = Some(workflow);
            let ps: Vec<NodeId> = parents[i].iter().map(|&p| ids[p]).collect();
            self.insert(ids[i], node, &ps, &mut out);
        }
        Ok(AddedWorkflow {
            workflow,
            changes: out,
        })
    }

    /// The node of a workflow's step.
    pub fn step(&self, workflow: WorkflowId, name: &str) -> Option<NodeId> {
        self.workflows.get(&workflow)?.by_name.get(name).copied()
    }

    /// The workflows the graph holds with ids after `after` (`None`: from the first), in
    /// id order (for operators: page with the last id listed).
    pub fn workflow_ids(&self, after: Option<WorkflowId>) -> impl Iterator<Item = WorkflowId> + '_ {
        let start = match after {
            Some(a) if a.0 == u64::MAX => None,
            Some(a) => Some(WorkflowId(a.0 + 1)),
            None => Some(WorkflowId(0)),
        };
        start
            .into_iter()
            .flat_map(move |s| self.workflows.range(s..).map(|(id, _)| *id))
    }

    /// Each step of a workflow, with its node and state, in the spec's order.
    pub fn workflow_steps(
        &self,
        workflow: WorkflowId,
    ) -> Option<impl Iterator<Item = (&str, NodeId, StepState)> + '_> {
        let w = self.workflows.get(&workflow)?;
        Some(
            w.steps.iter().filter_map(|(name, id)| {
                Some((name.as_str(), *id, self.nodes.get(id)?.step_state()))
            }),
        )
    }

    /// Cancels what is left of a workflow: steps waiting, held or released are cancelled
    /// (their payloads kept for a retry); steps in the queue are listed for the store to
    /// cancel there; finished steps stay as they are.
    pub fn cancel_workflow(
        &mut self,
        workflow: WorkflowId,
    ) -> Result<CancelledWorkflow<T>, GraphError> {
        let steps: Vec<NodeId> = self
            .workflows
            .get(&workflow)
            .ok_or(GraphError::UnknownWorkflow(workflow))?
            .steps
            .iter()
            .map(|s| s.1)
            .collect();
        let mut cancelled = Vec::new();
        let mut in_queue = Vec::new();
        let mut out = Changes::none();
        for id in steps {
            let Some(node) = self.nodes.get_mut(&id) else {
                continue;
            };
            match node.state {
                State::Pending | State::Ready => {
                    node.cancelled_by_parent = false;
                    cancelled.push(id);
                    self.set_state(id, State::Cancelled, &mut out);
                }
                // An operator's cancel: no retry of a parent revives it.
                State::Cancelled => node.cancelled_by_parent = false,
                State::Queued(m) => in_queue.push(m),
                State::Acked(_) | State::DeadLettered(_) => {}
            }
        }
        let by_operator: BTreeSet<NodeId> = cancelled.iter().copied().collect();
        out.cancelled.retain(|c| !by_operator.contains(c));
        Ok(CancelledWorkflow {
            cancelled,
            in_queue,
            changes: out,
        })
    }

    /// Forgets a finished workflow (every step acked, dead-lettered or cancelled, and every
    /// job outside it that waits for a step finished or released too): its nodes, their
    /// messages and results go. Refused with [`GraphError::Unfinished`] naming a step
    /// otherwise.
    pub fn forget_workflow(&mut self, workflow: WorkflowId) -> Result<(), GraphError> {
        let w = self
            .workflows
            .get(&workflow)
            .ok_or(GraphError::UnknownWorkflow(workflow))?;
        let ids: Vec<NodeId> = w.steps.iter().map(|s| s.1).collect();
        self.forget_nodes(&ids)?;
        self.workflows.remove(&workflow);
        Ok(())
    }

    /// Removes `ids` if each is finished and every child outside them is no longer
    /// pending (so that no count depends on them).
    pub(super) fn forget_nodes(&mut self, ids: &[NodeId]) -> Result<(), GraphError> {
        let set: BTreeSet<NodeId> = ids.iter().copied().collect();
        for id in ids {
            let Some(n) = self.nodes.get(id) else {
                continue;
            };
            let outside_waits = n.children.iter().any(|c| {
                !set.contains(c)
                    && self.nodes.get(c).is_some_and(|c| {
                        c.state == State::Pending
                            || (c.state == State::Cancelled && c.cancelled_by_parent)
                    })
            });
            if !n.state.class_is_finished() || outside_waits {
                return Err(GraphError::Unfinished(*id));
            }
        }
        for id in ids {
            let Some(n) = self.nodes.remove(id) else {
                continue;
            };
            if let Some(m) = n.message {
                self.by_message.remove(&m);
            }
            for c in &n.children {
                if let Some(child) = self.nodes.get_mut(c) {
                    if !set.contains(c) {
                        child.parents.retain(|p| p != id);
                    }
                }
            }
            for p in &n.parents {
                if let Some(parent) = self.nodes.get_mut(p) {
                    if !set.contains(p) {
                        parent.children.retain(|c| c != id);
                    }
                }
            }
        }
        Ok(())
    }
}
