//! A node of the graph: one job, its place among its parents and children, and the two
//! counters that decide when it is released.

use alloc::vec::Vec;

use super::ids::{BatchId, NodeId, WorkflowId};
use crate::id::MessageId;

/// What a job does when one of its parents fails (is dead-lettered or cancelled): chosen
/// per job when it is added, or for every step of a workflow.
///
/// Whatever the policy, a job is released only once no parent is still open (pending,
/// ready or in the queue): a failed parent never releases a job early.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum OnFailedParent {
    /// The job is cancelled, and with it, each by its own policy, the jobs that wait for it
    /// (so with `Cancel` everywhere, everything downstream). The default: a step whose input
    /// is missing does not run.
    #[default]
    Cancel,
    /// The failed parent counts as finished: the job runs once every other parent is
    /// acked or failed too (a batch's `on complete` callback).
    Run,
    /// The job is held for an operator: it stays pending while a parent is failed, and goes
    /// on by itself if that parent is redriven or retried and then acked (a batch's
    /// `on success` callback). [`Graph::release_held`](super::Graph::release_held) runs it
    /// anyway, [`Graph::cancel`](super::Graph::cancel) drops it.
    Hold,
}

/// Where a node is: the graph's own view. Whether a queued job is ready or running is the
/// queue's knowledge (its [`MessageId`]'s state there).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum StepState {
    /// Waiting for parents that are still open.
    Pending,
    /// Held for an operator: a parent failed and its policy is [`OnFailedParent::Hold`].
    Held,
    /// Released: its payload was handed to the store, which pushes it and names its
    /// message ([`Graph::queued`](super::Graph::queued)).
    Ready,
    /// In the queue as this message (ready, delayed or running there).
    Queued(MessageId),
    /// Acked: done.
    Acked(MessageId),
    /// Dead-lettered in the queue (a redrive or [`Graph::retry`](super::Graph::retry)
    /// brings it back).
    DeadLettered(MessageId),
    /// Cancelled: by an operator, or because a parent failed.
    Cancelled,
}

impl StepState {
    /// Whether the job is finished for now (acked, dead-lettered or cancelled).
    pub const fn is_finished(self) -> bool {
        matches!(
            self,
            StepState::Acked(_) | StepState::DeadLettered(_) | StepState::Cancelled
        )
    }
}

/// A node's state as the graph keeps it (`Held` is `Pending` with a failed parent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    Pending,
    Ready,
    Queued(MessageId),
    Acked(MessageId),
    DeadLettered(MessageId),
    Cancelled,
}

/// What a node's state means to the nodes that wait for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    /// Not finished: pending, ready or queued.
    Open,
    Acked,
    /// Dead-lettered or cancelled.
    Failed,
}

impl State {
    pub(super) const fn class(self) -> Class {
        match self {
            State::Pending | State::Ready | State::Queued(_) => Class::Open,
            State::Acked(_) => Class::Acked,
            State::DeadLettered(_) | State::Cancelled => Class::Failed,
        }
    }
}

impl State {
    /// Acked, dead-lettered or cancelled.
    pub(super) const fn class_is_finished(self) -> bool {
        !matches!(self.class(), Class::Open)
    }
}

impl OnFailedParent {
    /// What a parent in `class` adds to a waiting child's two counters: (still waited
    /// for, failed). A child is released when the first is zero over its parents; the
    /// second holds it (`Hold`) or cancels it (`Cancel`).
    pub(super) const fn weight(self, class: Class) -> (u32, u32) {
        match (self, class) {
            (_, Class::Acked) => (0, 0),
            (_, Class::Open) => (1, 0),
            (OnFailedParent::Run, Class::Failed) => (0, 0),
            (OnFailedParent::Cancel | OnFailedParent::Hold, Class::Failed) => (1, 1),
        }
    }
}

/// A node: the job's payload until it is released, its edges and its counters.
#[derive(Debug)]
pub(super) struct Node<T> {
    pub(super) state: State,
    /// The payload while the graph holds it: pending, or cancelled before it was
    /// released (kept for a retry).
    pub(super) payload: Option<T>,
    pub(super) parents: Vec<NodeId>,
    pub(super) children: Vec<NodeId>,
    pub(super) policy: OnFailedParent,
    /// Parents still waited for (see [`OnFailedParent::weight`]); kept while pending.
    pub(super) waiting: u32,
    /// Failed parents that hold or cancel it; kept while pending.
    pub(super) failed: u32,
    /// Cancelled because a parent failed (a retry of that parent revives it).
    pub(super) cancelled_by_parent: bool,
    /// The class its children were last told (see `engine`).
    pub(super) told: Class,
    pub(super) workflow: Option<WorkflowId>,
    /// The batch it is a child of (its outcome is counted there).
    pub(super) batch: Option<BatchId>,
    /// The message it was pushed as (kept when it is cancelled in the queue).
    pub(super) message: Option<MessageId>,
    /// What it recorded for its dependents.
    pub(super) result: Option<Vec<u8>>,
}

impl<T> Node<T> {
    pub(super) fn new(payload: Option<T>, policy: OnFailedParent) -> Self {
        Node {
            state: State::Pending,
            payload,
            parents: Vec::new(),
            children: Vec::new(),
            policy,
            waiting: 0,
            failed: 0,
            cancelled_by_parent: false,
            told: Class::Open,
            workflow: None,
            batch: None,
            message: None,
            result: None,
        }
    }

    /// The state shown to callers.
    pub(super) fn step_state(&self) -> StepState {
        match self.state {
            State::Pending if self.failed > 0 && self.policy == OnFailedParent::Hold => {
                StepState::Held
            }
            State::Pending => StepState::Pending,
            State::Ready => StepState::Ready,
            State::Queued(m) => StepState::Queued(m),
            State::Acked(m) => StepState::Acked(m),
            State::DeadLettered(m) => StepState::DeadLettered(m),
            State::Cancelled => StepState::Cancelled,
        }
    }
}
