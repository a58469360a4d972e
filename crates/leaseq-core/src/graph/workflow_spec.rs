//! A workflow before it is added: named steps, each with its payload, the steps it waits
//! for and its policy; and its checks (names, parents, cycles), all made before anything
//! is added.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use super::node::OnFailedParent;

/// A DAG of named steps to add as one unit ([`Graph::add_workflow`](super::Graph::add_workflow)).
///
/// ```
/// use leaseq_core::graph::{OnFailedParent, WorkflowSpec};
/// let spec = WorkflowSpec::new()
///     .step("resize", "resize.jpg", &[])
///     .step("upload", "upload.jpg", &["resize"])
///     .step_with("notify", "notify", &["upload"], OnFailedParent::Run);
/// assert_eq!(spec.len(), 3);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkflowSpec<T> {
    pub(super) steps: Vec<StepSpec<T>>,
    pub(super) policy: OnFailedParent,
}

/// One step of a spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct StepSpec<T> {
    pub(super) name: String,
    pub(super) payload: T,
    pub(super) after: Vec<String>,
    pub(super) policy: Option<OnFailedParent>,
}

/// A refused workflow: why, and the spec handed back whole.
#[derive(Debug, PartialEq, Eq)]
pub struct WorkflowRefused<T> {
    /// Why.
    pub error: WorkflowError,
    /// The spec, as given.
    pub spec: WorkflowSpec<T>,
}

impl<T> fmt::Display for WorkflowRefused<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "workflow not added: {}", self.error)
    }
}

impl<T: fmt::Debug> core::error::Error for WorkflowRefused<T> {}

impl<T> Default for WorkflowSpec<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> WorkflowSpec<T> {
    /// The longest step name, in bytes.
    pub const MAX_NAME_LEN: usize = 128;

    /// No step yet; each step's policy for a failed parent is [`OnFailedParent::Cancel`]
    /// unless set ([`with_policy`](Self::with_policy), [`step_with`](Self::step_with)).
    pub const fn new() -> Self {
        WorkflowSpec {
            steps: Vec::new(),
            policy: OnFailedParent::Cancel,
        }
    }

    /// The policy of every step that does not set its own.
    pub const fn with_policy(mut self, policy: OnFailedParent) -> Self {
        self.policy = policy;
        self
    }

    /// A step named `name` that waits for the steps named in `after`.
    pub fn step(self, name: impl Into<String>, payload: T, after: &[&str]) -> Self {
        self.push_step(name.into(), payload, after, None)
    }

    /// [`step`](Self::step) with its own policy for a failed parent.
    pub fn step_with(
        self,
        name: impl Into<String>,
        payload: T,
        after: &[&str],
        policy: OnFailedParent,
    ) -> Self {
        self.push_step(name.into(), payload, after, Some(policy))
    }

    fn push_step(
        mut self,
        name: String,
        payload: T,
        after: &[&str],
        policy: Option<OnFailedParent>,
    ) -> Self {
        self.steps.push(StepSpec {
            name,
            payload,
            after: after.iter().map(|s| String::from(*s)).collect(),
            policy,
        });
        self
    }

    /// How many steps.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether it has no step.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Each step's payload, in the order the steps were given (for a store that checks
    /// them before it takes the spec).
    pub fn payloads(&self) -> impl Iterator<Item = &T> + '_ {
        self.steps.iter().map(|s| &s.payload)
    }

    /// Checks the spec and returns each step's parents as step indexes, and an order in
    /// which every step comes after its parents.
    pub(super) fn check(&self) -> Result<(Vec<Vec<usize>>, Vec<usize>), WorkflowError> {
        if self.steps.is_empty() {
            return Err(WorkflowError::Empty);
        }
        let mut index = BTreeMap::new();
        for (i, s) in self.steps.iter().enumerate() {
            if s.name.is_empty() || s.name.len() > Self::MAX_NAME_LEN {
                return Err(WorkflowError::BadName(s.name.clone()));
            }
            if index.insert(s.name.as_str(), i).is_some() {
                return Err(WorkflowError::DuplicateStep(s.name.clone()));
            }
        }
        let mut parents = Vec::with_capacity(self.steps.len());
        for s in &self.steps {
            let mut ps: Vec<usize> = Vec::with_capacity(s.after.len());
            for a in &s.after {
                let Some(&p) = index.get(a.as_str()) else {
                    return Err(WorkflowError::UnknownParent {
                        step: s.name.clone(),
                        parent: a.clone(),
                    });
                };
                if ps.contains(&p) {
                    return Err(WorkflowError::DuplicateParent {
                        step: s.name.clone(),
                        parent: a.clone(),
                    });
                }
                ps.push(p);
            }
            parents.push(ps);
        }
        let order = self.topological(&parents)?;
        Ok((parents, order))
    }

    /// Kahn's algorithm: the steps in an order where each follows its parents, or the
    /// steps of one cycle.
    fn topological(&self, parents: &[Vec<usize>]) -> Result<Vec<usize>, WorkflowError> {
        let n = parents.len();
        let mut children = alloc::vec![Vec::new(); n];
        let mut waiting: Vec<usize> = parents.iter().map(Vec::len).collect();
        for (c, ps) in parents.iter().enumerate() {
            for &p in ps {
                children[p].push(c);
            }
        }
        let mut order: Vec<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
        let mut at = 0;
        while at < order.len() {
            for &c in &children[order[at]] {
                waiting[c] -= 1;
                if waiting[c] == 0 {
                    order.push(c);
                }
            }
            at += 1;
        }
        if order.len() == n {
            return Ok(order);
        }
        // Every step left waits for another step left: walk parents until one repeats.
        let start = (0..n).find(|&i| waiting[i] > 0).expect("a step is left");
        let mut seen = alloc::vec![usize::MAX; n];
        let mut path = Vec::new();
        let mut at = start;
        while seen[at] == usize::MAX {
            seen[at] = path.len();
            path.push(at);
            at = *parents[at]
                .iter()
                .find(|&&p| waiting[p] > 0)
                .expect("a step left waits for a step left");
        }
        // `path[seen[at]..]` is the cycle, each waiting for the next.
        Err(WorkflowError::Cycle(
            path[seen[at]..]
                .iter()
                .map(|&i| self.steps[i].name.clone())
                .collect(),
        ))
    }
}

/// Why a workflow was refused (nothing of it was added).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkflowError {
    /// A workflow needs at least one step.
    Empty,
    /// A step's name is empty or longer than
    /// [`WorkflowSpec::MAX_NAME_LEN`] bytes.
    BadName(String),
    /// Two steps have this name.
    DuplicateStep(String),
    /// A step names a parent twice.
    DuplicateParent {
        /// The step.
        step: String,
        /// The parent named twice.
        parent: String,
    },
    /// A step waits for a step the workflow does not have.
    UnknownParent {
        /// The step.
        step: String,
        /// The name it waits for.
        parent: String,
    },
    /// The steps wait for each other in a circle (a step waiting for itself included):
    /// the steps on one such circle, in order, each waiting for the next... the last for
    /// the first.
    Cycle(alloc::vec::Vec<String>),
}

impl fmt::Display for WorkflowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkflowError::Empty => f.write_str("a workflow needs at least one step"),
            WorkflowError::BadName(n) => write!(
                f,
                "step name {n:?} must be 1 to {} bytes",
                WorkflowSpec::<()>::MAX_NAME_LEN
            ),
            WorkflowError::DuplicateStep(n) => write!(f, "two steps are named {n:?}"),
            WorkflowError::DuplicateParent { step, parent } => {
                write!(f, "step {step:?} names {parent:?} twice")
            }
            WorkflowError::UnknownParent { step, parent } => {
                write!(f, "step {step:?} waits for {parent:?}, which is not a step")
            }
            WorkflowError::Cycle(steps) => {
                write!(
                    f,
                    "the steps wait for each other in a circle: {}",
                    steps.join(" -> ")
                )
            }
        }
    }
}

impl core::error::Error for WorkflowError {}
