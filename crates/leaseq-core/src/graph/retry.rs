//! An operator's hand on a node: retry a failed job (and with it what it cancelled),
//! release a held job, cancel a waiting one.

use alloc::vec::Vec;

use super::error::GraphError;
use super::ids::NodeId;
use super::ids::WorkflowId;
use super::node::{OnFailedParent, State};
use super::{Changes, Graph};
use crate::id::MessageId;

/// A retry ([`Graph::retry`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct Retried<T> {
    /// The dead letter to redrive in the queue now, in the same step (a dead-lettered job
    /// is in the queue again as this message; if the redrive is refused, tell the graph
    /// with [`Graph::settle`] and [`Fate::DeadLettered`](super::Fate::DeadLettered)).
    pub redrive: Option<MessageId>,
    /// What followed: the job itself released (a cancelled job with no open parent), the
    /// jobs it had cancelled revived, those it held waiting again.
    pub changes: Changes<T>,
}

impl<T> Graph<T> {
    /// Retries a failed job: a dead-lettered one is in the queue again (the store redrives
    /// it); a cancelled one the graph still holds is pending again (released at once if
    /// no parent is open). Either way the jobs it cancelled are revived unless another
    /// failed parent still cancels them, and those it held wait for it again.
    ///
    /// Refused when the job is not failed ([`GraphError::WrongState`]), was cancelled in the
    /// queue ([`GraphError::PayloadGone`]), or a failed parent of its own cancels it
    /// ([`GraphError::ParentFailed`]: retry that one first).
    pub fn retry(&mut self, node: NodeId) -> Result<Retried<T>, GraphError> {
        let n = self.nodes.get(&node).ok_or(GraphError::UnknownNode(node))?;
        let mut out = Changes::none();
        match n.state {
            State::DeadLettered(m) => {
                self.set_state(node, State::Queued(m), &mut out);
                Ok(Retried {
                    redrive: Some(m),
                    changes: out,
                })
            }
            State::Cancelled if n.payload.is_none() => Err(GraphError::PayloadGone(node)),
            State::Cancelled => {
                let (waiting, failed) = self.recount(node);
                let n = &self.nodes[&node];
                if n.policy == OnFailedParent::Cancel && failed > 0 {
                    let parent = n
                        .parents
                        .iter()
                        .copied()
                        .find(|p| {
                            self.nodes.get(p).is_some_and(|p| {
                                p.state.class_is_finished() && !matches!(p.state, State::Acked(_))
                            })
                        })
                        .unwrap_or(node);
                    return Err(GraphError::ParentFailed { node, parent });
                }
                self.reopen(node, waiting, failed, &mut out);
                Ok(Retried {
                    redrive: None,
                    changes: out,
                })
            }
            _ => Err(GraphError::WrongState {
                node,
                state: n.step_state(),
            }),
        }
    }

    /// [`retry`](Self::retry) of a workflow's step, by name.
    pub fn retry_step(
        &mut self,
        workflow: WorkflowId,
        name: &str,
    ) -> Result<Retried<T>, GraphError> {
        if !self.workflows.contains_key(&workflow) {
            return Err(GraphError::UnknownWorkflow(workflow));
        }
        let node = self
            .step(workflow, name)
            .ok_or_else(|| GraphError::UnknownStep(name.into()))?;
        self.retry(node)
    }

    /// Runs a held job anyway: its policy becomes [`OnFailedParent::Run`], so its failed
    /// parents count as finished; it is released now if no parent is still open.
    /// Refused ([`GraphError::WrongState`]) unless it is held.
    pub fn release_held(&mut self, node: NodeId) -> Result<Changes<T>, GraphError> {
        let n = self.nodes.get(&node).ok_or(GraphError::UnknownNode(node))?;
        if n.step_state() != super::StepState::Held {
            return Err(GraphError::WrongState {
                node,
                state: n.step_state(),
            });
        }
        let mut out = Changes::none();
        if let Some(n) = self.nodes.get_mut(&node) {
            n.policy = OnFailedParent::Run;
        }
        let (waiting, failed) = self.recount(node);
        if let Some(n) = self.nodes.get_mut(&node) {
            n.waiting = waiting;
            n.failed = failed;
        }
        let mut work = Vec::new();
        self.judge(node, &mut work, &mut out);
        Ok(out)
    }

    /// Cancels a job the graph holds (waiting, held, or released and not yet queued): its
    /// payload is kept for a retry, and the jobs that wait for it follow their policies.
    /// A job in the queue is refused with [`GraphError::InQueue`] (cancel it there, then
    /// settle it); a finished one with [`GraphError::WrongState`].
    pub fn cancel(&mut self, node: NodeId) -> Result<Changes<T>, GraphError> {
        let n = self
            .nodes
            .get_mut(&node)
            .ok_or(GraphError::UnknownNode(node))?;
        match n.state {
            State::Pending | State::Ready => {
                n.cancelled_by_parent = false;
                let mut out = Changes::none();
                self.set_state(node, State::Cancelled, &mut out);
                Ok(out)
            }
            State::Queued(m) => Err(GraphError::InQueue(m)),
            _ => Err(GraphError::WrongState {
                node,
                state: n.step_state(),
            }),
        }
    }

    /// A cancelled node pending again with the counters given, judged, its children told.
    fn reopen(&mut self, node: NodeId, waiting: u32, failed: u32, out: &mut Changes<T>) {
        if let Some(n) = self.nodes.get_mut(&node) {
            n.state = State::Pending;
            n.cancelled_by_parent = false;
            n.waiting = waiting;
            n.failed = failed;
            if let Some(b) = n.batch {
                self.count_in_batch(b, State::Cancelled, State::Pending);
            }
        }
        let mut work = Vec::new();
        work.push(node);
        self.judge(node, &mut work, out);
        for w in work {
            self.propagate(w, out);
        }
    }
}
