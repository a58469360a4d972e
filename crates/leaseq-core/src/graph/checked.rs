//! A workflow's steps checked and put in order, for a store that keeps the graph in its own
//! tables (Postgres) and adds the steps there one by one, parents first, in one commit.

use alloc::string::String;
use alloc::vec::Vec;

use super::node::OnFailedParent;
use super::workflow_spec::{WorkflowRefused, WorkflowSpec};

/// One step of a checked workflow ([`WorkflowSpec::into_checked`]).
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckedStep<T> {
    /// Its name.
    pub name: String,
    /// Its payload.
    pub payload: T,
    /// Its parents, as indexes of the steps before it in the checked order.
    pub parents: Vec<usize>,
    /// Its policy for a failed parent (its own, or the spec's).
    pub policy: OnFailedParent,
    /// Its place in the spec as given.
    pub spec_index: usize,
}

impl<T> WorkflowSpec<T> {
    /// Checks the spec as [`Graph::add_workflow`](super::Graph::add_workflow) does (names,
    /// parents, cycles) and hands its steps back in an order where each follows its
    /// parents; refused, the spec comes back whole.
    ///
    /// ```
    /// use leaseq_core::graph::WorkflowSpec;
    /// let spec = WorkflowSpec::new().step("b", 2, &["a"]).step("a", 1, &[]);
    /// let steps = spec.into_checked().unwrap();
    /// assert_eq!((steps[0].name.as_str(), steps[1].parents.as_slice()), ("a", &[0][..]));
    /// let cycle = WorkflowSpec::new().step("a", 1, &["b"]).step("b", 2, &["a"]);
    /// assert!(cycle.into_checked().is_err());
    /// ```
    pub fn into_checked(self) -> Result<Vec<CheckedStep<T>>, WorkflowRefused<T>> {
        let (parents, order) = match self.check() {
            Ok(checked) => checked,
            Err(error) => return Err(WorkflowRefused { error, spec: self }),
        };
        let mut place = alloc::vec![0; order.len()];
        for (at, &i) in order.iter().enumerate() {
            place[i] = at;
        }
        let default = self.policy;
        let mut steps: Vec<Option<_>> = self.steps.into_iter().map(Some).collect();
        Ok(order
            .iter()
            .map(|&i| {
                let s = steps[i].take().expect("each step once");
                CheckedStep {
                    name: s.name,
                    payload: s.payload,
                    parents: parents[i].iter().map(|&p| place[p]).collect(),
                    policy: s.policy.unwrap_or(default),
                    spec_index: i,
                }
            })
            .collect())
    }
}
