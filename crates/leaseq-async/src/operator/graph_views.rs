//! What an operator shows of workflows and batches ([`WorkflowView`], [`BatchView`], each
//! step a [`StepView`] with its [`StepStatus`]): written once, for every store that keeps
//! a dependency graph, and for the tools over them.

use leaseq_core::graph::{BatchCounts, BatchId, BatchOn, NodeId, StepState, WorkflowId};
use leaseq_core::MessageId;

use crate::stored::StoredState;

/// Where a step stands, in the words tools show: the graph's state, and for a step in the
/// queue, the queue's (ready, delayed, running).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StepStatus {
    /// Waiting for steps it depends on.
    Waiting,
    /// Held for an operator: a step it depends on failed (policy `Hold`).
    Held,
    /// Released by the graph, being pushed.
    Released,
    /// In the queue, visible: the next receive may take it.
    Ready,
    /// In the queue, waiting for a delay or a backoff.
    Delayed,
    /// In the queue, leased: a handler runs it.
    Running,
    /// Acked.
    Done,
    /// Dead-lettered (a retry brings it back).
    DeadLettered,
    /// Cancelled: by an operator, or because a step it depends on failed.
    Cancelled,
}

impl StepStatus {
    /// The status of a step in `state`, the queue's state of its message beside it (`None`:
    /// not read, or no longer there).
    pub fn of(state: StepState, in_queue: Option<StoredState>) -> StepStatus {
        match state {
            StepState::Pending => StepStatus::Waiting,
            StepState::Held => StepStatus::Held,
            StepState::Ready => StepStatus::Released,
            StepState::Queued(_) => match in_queue {
                Some(StoredState::Delayed) => StepStatus::Delayed,
                Some(StoredState::InFlight) => StepStatus::Running,
                Some(StoredState::Dead) => StepStatus::DeadLettered,
                Some(StoredState::Ready) | None => StepStatus::Ready,
            },
            StepState::Acked(_) => StepStatus::Done,
            StepState::DeadLettered(_) => StepStatus::DeadLettered,
            // (`StepState` may grow: a state not known here is shown as waiting.)
            StepState::Cancelled => StepStatus::Cancelled,
            _ => StepStatus::Waiting,
        }
    }

    /// A short lower-case name ("waiting", "running", "dead-lettered", ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            StepStatus::Waiting => "waiting",
            StepStatus::Held => "held",
            StepStatus::Released => "released",
            StepStatus::Ready => "ready",
            StepStatus::Delayed => "delayed",
            StepStatus::Running => "running",
            StepStatus::Done => "done",
            StepStatus::DeadLettered => "dead-lettered",
            StepStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the step is finished for now (done, dead-lettered or cancelled).
    pub const fn is_finished(self) -> bool {
        matches!(
            self,
            StepStatus::Done | StepStatus::DeadLettered | StepStatus::Cancelled
        )
    }
}

impl std::fmt::Display for StepStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One step (a workflow's, or a batch's callback) as an operator reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StepView {
    /// Its name in the workflow's spec ("callback" for a batch's callback).
    pub name: String,
    /// Its job in the graph.
    pub node: NodeId,
    /// Where it stands.
    pub status: StepStatus,
    /// The message it was pushed as, once released.
    pub message: Option<MessageId>,
    /// The steps it depends on, by name (a workflow's edges, in the spec's order).
    pub after: Vec<String>,
    /// Deliveries so far, where the queue still holds its message (live or dead letter).
    pub attempts: Option<u32>,
    /// The last failure's error, where the queue keeps it (a dead letter's).
    pub last_error: Option<String>,
    /// The length in bytes of the result it recorded, if any.
    pub result_size: Option<u64>,
}

impl StepView {
    /// A step named `name`, its job `node`, with `status`; nothing else known yet.
    pub fn new(name: impl Into<String>, node: NodeId, status: StepStatus) -> StepView {
        StepView {
            name: name.into(),
            node,
            status,
            message: None,
            after: Vec::new(),
            attempts: None,
            last_error: None,
            result_size: None,
        }
    }
}

/// A workflow as an operator reads it: its steps, in the spec's order.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkflowView {
    /// The workflow.
    pub id: WorkflowId,
    /// Its steps, in the spec's order.
    pub steps: Vec<StepView>,
}

impl WorkflowView {
    /// A workflow with `steps`.
    pub fn new(id: WorkflowId, steps: Vec<StepView>) -> WorkflowView {
        WorkflowView { id, steps }
    }

    /// The workflow as a whole, in a word: "done" (every step done), "failed" (a step
    /// dead-lettered), "cancelled" (every step finished, one cancelled), else "running".
    pub fn status(&self) -> &'static str {
        let has = |s: StepStatus| self.steps.iter().any(|x| x.status == s);
        if self.steps.iter().all(|s| s.status == StepStatus::Done) {
            "done"
        } else if has(StepStatus::DeadLettered) {
            "failed"
        } else if self.steps.iter().all(|s| s.status.is_finished()) {
            "cancelled"
        } else {
            "running"
        }
    }

    /// How many of its steps are done.
    pub fn done(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| s.status == StepStatus::Done)
            .count()
    }
}

/// A batch as an operator reads it: its children's counts and its callback.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BatchView {
    /// The batch.
    pub id: BatchId,
    /// When its callback runs (every child acked, or every child finished).
    pub on: BatchOn,
    /// Its children, counted by outcome (exact through redeliveries).
    pub counts: BatchCounts,
    /// Its callback job (named "callback").
    pub callback: StepView,
}

impl BatchView {
    /// A batch with its counts and callback.
    pub fn new(id: BatchId, on: BatchOn, counts: BatchCounts, callback: StepView) -> BatchView {
        BatchView {
            id,
            on,
            counts,
            callback,
        }
    }

    /// When its callback runs, in words: "on success" or "on complete".
    pub fn on_str(&self) -> &'static str {
        match self.on {
            BatchOn::Success => "on success",
            _ => "on complete",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(status: StepStatus) -> StepView {
        StepView::new("s", NodeId::new(0), status)
    }

    #[test]
    fn a_queued_step_takes_the_queues_state_and_a_workflow_its_word() {
        let m = MessageId::new(3);
        let q = |s| StepStatus::of(StepState::Queued(m), s);
        assert_eq!(q(Some(StoredState::InFlight)).as_str(), "running");
        assert_eq!(q(Some(StoredState::Delayed)).as_str(), "delayed");
        assert_eq!(q(None).as_str(), "ready");
        assert_eq!(StepStatus::of(StepState::Held, None).as_str(), "held");
        let wf = |s: &[StepStatus]| {
            WorkflowView::new(WorkflowId::new(0), s.iter().map(|&s| step(s)).collect())
        };
        use StepStatus::*;
        assert_eq!(wf(&[Done, Done]).status(), "done");
        assert_eq!(wf(&[Done, Running]).status(), "running");
        assert_eq!(wf(&[DeadLettered, Cancelled]).status(), "failed");
        assert_eq!(wf(&[Done, Cancelled]).status(), "cancelled");
        assert_eq!(wf(&[Done, Waiting]).done(), 1);
    }
}
