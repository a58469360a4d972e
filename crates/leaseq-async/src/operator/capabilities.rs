//! [`Capabilities`]: what an operator can do besides reading.

/// What an [`Operator`](super::Operator) can do besides reading; tools offer an action
/// only where its flag is set. [`Capabilities::default`]: nothing (reads only).
///
/// ```
/// use leaseq_async::operator::Capabilities;
///
/// let mut acts = Capabilities::default();
/// acts.cancel = true;
/// assert!(acts.cancel && !acts.purge);
/// assert!(Capabilities::every_action().purge);
/// assert!(!acts.workflows, "no workflows unless the operator reads them");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// Dead letters can be put back (one, or all a filter takes:
    /// [`Operator::redrive`](super::Operator::redrive),
    /// [`Operator::redrive_dead`](super::Operator::redrive_dead)).
    pub redrive: bool,
    /// Items can be deleted: dead letters
    /// ([`Operator::purge_dead`](super::Operator::purge_dead)) and every waiting item
    /// ([`Operator::purge`](super::Operator::purge)).
    pub purge: bool,
    /// Queues can be paused and resumed
    /// ([`Operator::set_paused`](super::Operator::set_paused)).
    pub pause: bool,
    /// Waiting items can be cancelled, all a filter takes
    /// ([`Operator::cancel`](super::Operator::cancel)).
    pub cancel: bool,
    /// The store can keep a record of finished jobs
    /// ([`Operator::history`](super::Operator::history); it holds entries only where the
    /// queues' stores were asked to keep one).
    pub history: bool,
    /// The store keeps workflows and batches (jobs that wait for jobs) that this operator
    /// reads ([`Operator::workflows`](super::Operator::workflows),
    /// [`Operator::batches`](super::Operator::batches), on the queues whose store keeps a
    /// dependency graph) and, with `cancel` and `redrive`, acts on
    /// ([`Operator::cancel_workflow`](super::Operator::cancel_workflow),
    /// [`Operator::retry_step`](super::Operator::retry_step)). Without it a tool says the
    /// store does not offer them.
    pub workflows: bool,
}

impl Capabilities {
    /// Every action (redrive, purge, pause, cancel); `history` and `workflows` not set.
    pub fn every_action() -> Capabilities {
        Capabilities {
            redrive: true,
            purge: true,
            pause: true,
            cancel: true,
            history: false,
            workflows: false,
        }
    }
}
