//! [`DependencyStore`](crate::dependencies::DependencyStore) for the memory store: each call one critical section, the graph's
//! releases pushed before the lock is released (see `graph.rs`).

use std::sync::atomic::Ordering;

use leaseq_core::graph::{BatchCounts, BatchId, BatchOn, Fate, NodeId, OnFailedParent};
use leaseq_core::graph::{StepState, WorkflowId, WorkflowSpec};
use leaseq_core::MessageId;

use super::{Locked, MemoryStore, State};
use crate::dependencies::WorkflowStep;
use crate::dependencies::{DependencyError, Parent, ParentOutcome, Refused};
use crate::runtime::Runtime;

impl<T, R: Runtime> MemoryStore<T, R> {
    /// The lock for a call that changes the graph: refused on a closed or bounded queue;
    /// the time applied and the noted dead letters told first; the core set to note dead
    /// letters (and the driver to drain them) from the graph's first use on.
    fn graph_lock(&self) -> Result<Locked<'_, T, R>, DependencyError> {
        if self.closed() {
            return Err(DependencyError::Closed);
        }
        let now = self.rt.now();
        let mut st = self.lock();
        if st.core.config().capacity().is_some() {
            return Err(DependencyError::Bounded);
        }
        if !st.graph.on {
            st.graph.on = true;
            st.core.note_dead_letters();
            self.watches_core.store(true, Ordering::Relaxed);
        }
        st.core.handle_timeout(now);
        if st.core.has_noted_dead() {
            self.record_dead(&mut st);
        }
        Ok(st)
    }

    /// The lock for a read: the noted dead letters told first.
    fn graph_read(&self) -> Locked<'_, T, R> {
        self.lock_recorded()
    }
}

impl<T> State<T> {
    /// Checks that every message parent was pushed here (before anything is adopted).
    fn check_messages(&self, parents: &[Parent]) -> Result<(), DependencyError> {
        let next = self.core.next_id().get();
        match parents.iter().find_map(|p| match *p {
            Parent::Message(m) if m.get() >= next => Some(m),
            _ => None,
        }) {
            Some(m) => Err(DependencyError::UnknownMessage(m)),
            None => Ok(()),
        }
    }

    /// The node of each parent; a message adopted while the queue has it (live or
    /// dead-lettered), left out when finished.
    fn parent_nodes(&mut self, parents: &[Parent]) -> Vec<NodeId> {
        let mut nodes = Vec::with_capacity(parents.len());
        for p in parents {
            match *p {
                Parent::Job(n) => nodes.push(n),
                Parent::Message(m) => {
                    if let Some(n) = self.graph.graph.node_of(m) {
                        nodes.push(n);
                    } else if self.core.attempts_of(m).is_some() {
                        nodes.push(self.graph.graph.adopt(m));
                    } else if self.core.get_dead_letter(m).is_some() {
                        nodes.push(self.graph.graph.adopt(m));
                        // A node of no child yet: nothing follows.
                        let _ = self.graph.graph.settle(m, Fate::DeadLettered);
                    }
                }
            }
        }
        nodes
    }
}

/// The bodies of [`DependencyStore`]'s calls, each one critical section (the trait's
/// futures, `graph_trait.rs`, are these answers, ready at once).
impl<T: Clone + Send + 'static, R: Runtime> MemoryStore<T, R> {
    pub(super) fn push_after_now(
        &self,
        item: T,
        parents: &[Parent],
        policy: OnFailedParent,
    ) -> Result<NodeId, Refused<T>> {
        // A dead letter lent out (`lend.rs`) is no finished parent: wait for its return.
        let _gate = self.dead_gate();
        let mut st = match self.graph_lock() {
            Ok(st) => st,
            Err(error) => {
                return Err(Refused {
                    error,
                    payload: item,
                })
            }
        };
        if let Err(error) = st.check_messages(parents) {
            return Err(Refused {
                error,
                payload: item,
            });
        }
        let nodes = st.parent_nodes(parents);
        match st.graph.graph.add(item, &nodes, policy) {
            Ok(added) => {
                st.push_released(added.changes, &self.inbox);
                Ok(added.node)
            }
            Err(e) => Err(Refused {
                error: DependencyError::Graph(e.error),
                payload: e.payload,
            }),
        }
    }

    pub(super) fn push_workflow_now(
        &self,
        spec: WorkflowSpec<T>,
    ) -> Result<WorkflowId, Refused<WorkflowSpec<T>>> {
        let mut st = match self.graph_lock() {
            Ok(st) => st,
            Err(error) => {
                return Err(Refused {
                    error,
                    payload: spec,
                })
            }
        };
        match st.graph.graph.add_workflow(spec) {
            Ok(added) => {
                st.push_released(added.changes, &self.inbox);
                Ok(added.workflow)
            }
            Err(refused) => Err(Refused {
                error: DependencyError::Workflow(refused.error),
                payload: refused.spec,
            }),
        }
    }

    pub(super) fn workflow_steps_now(&self, workflow: WorkflowId) -> Option<Vec<WorkflowStep>> {
        let st = self.graph_read();
        let steps = st.graph.graph.workflow_steps(workflow)?;
        Some(
            steps
                .map(|(name, node, state)| WorkflowStep {
                    name: name.into(),
                    node,
                    state,
                })
                .collect(),
        )
    }

    pub(super) fn cancel_workflow_now(
        &self,
        workflow: WorkflowId,
    ) -> Result<Vec<NodeId>, DependencyError> {
        let now = self.rt.now();
        let mut st = self.graph_lock()?;
        let c = st
            .graph
            .graph
            .cancel_workflow(workflow)
            .map_err(DependencyError::Graph)?;
        let mut cancelled = c.cancelled;
        st.push_released(c.changes, &self.inbox);
        // The items leave the core by value: dropped after the lock, never under it.
        let mut gone = Vec::with_capacity(c.in_queue.len());
        for m in c.in_queue {
            let attempts = st.core.attempts_of(m).unwrap_or(0);
            if let Ok(item) = st.core.cancel_leased(m, now) {
                st.progress.remove(m);
                cancelled.extend(st.graph.graph.node_of(m));
                st.graph_settle(m, Fate::Cancelled, &self.inbox);
                gone.push((m, attempts, item));
            }
        }
        drop(st);
        if self.records() {
            for (m, attempts, item) in &gone {
                self.record_cancel(*m, *attempts, item, now);
            }
        }
        Ok(cancelled)
    }

    pub(super) fn retry_step_now(
        &self,
        workflow: WorkflowId,
        step: &str,
    ) -> Result<(), DependencyError> {
        let now = self.rt.now();
        let _gate = self.dead_gate(); // (a lent dead letter cannot be redriven)
        let mut st = self.graph_lock()?;
        let retried = st
            .graph
            .graph
            .retry_step(workflow, step)
            .map_err(DependencyError::Graph)?;
        st.push_released(retried.changes, &self.inbox);
        if let Some(m) = retried.redrive {
            if let Err(e) = st.core.redrive(m, now) {
                // Still dead-lettered: the graph is told so again.
                let back = st.graph.graph.settle(m, Fate::DeadLettered);
                st.push_released(back, &self.inbox);
                return Err(DependencyError::Redrive(e));
            }
        }
        Ok(())
    }

    pub(super) fn push_batch_now(
        &self,
        children: Vec<T>,
        callback: T,
        on: BatchOn,
    ) -> Result<BatchId, Refused<(Vec<T>, T)>> {
        let mut st = match self.graph_lock() {
            Ok(st) => st,
            Err(error) => {
                return Err(Refused {
                    error,
                    payload: (children, callback),
                })
            }
        };
        let added = st.graph.graph.add_batch(children, callback, on);
        st.push_released(added.changes, &self.inbox);
        Ok(added.batch)
    }

    pub(super) fn batch_counts_now(&self, batch: BatchId) -> Option<BatchCounts> {
        self.graph_read().graph.graph.batch_counts(batch)
    }

    pub(super) fn forget_workflow_now(&self, workflow: WorkflowId) -> Result<(), DependencyError> {
        let mut st = self.graph_read();
        let r = st.graph.graph.forget_workflow(workflow);
        r.map_err(DependencyError::Graph)
    }

    pub(super) fn forget_batch_now(&self, batch: BatchId) -> Result<(), DependencyError> {
        let mut st = self.graph_read();
        let r = st.graph.graph.forget_batch(batch);
        r.map_err(DependencyError::Graph)
    }

    pub(super) fn record_result_now(
        &self,
        message: MessageId,
        result: &[u8],
    ) -> Result<(), DependencyError> {
        self.graph_read()
            .graph
            .graph
            .record_result(message, result)
            .map_err(DependencyError::Result)
    }

    pub(super) fn parent_outcomes_now(&self, message: MessageId) -> Option<Vec<ParentOutcome>> {
        let st = self.graph_read();
        let g = &st.graph.graph;
        let node = g.node_of(message)?;
        let parents = g.parents(node)?;
        Some(
            parents
                .iter()
                .filter_map(|&p| {
                    Some(ParentOutcome {
                        node: p,
                        state: g.state(p)?,
                        result: g.result(p).map(<[u8]>::to_vec),
                    })
                })
                .collect(),
        )
    }

    pub(super) fn job_state_now(&self, node: NodeId) -> Option<StepState> {
        self.graph_read().graph.graph.state(node)
    }

    pub(super) fn job_of_now(&self, message: MessageId) -> Option<NodeId> {
        self.lock().graph.graph.node_of(message)
    }
}
