//! The dependency graph against a reference model: random DAGs of jobs with random
//! policies, then random outcomes (acks, dead letters, cancels in the queue, redrives,
//! retries, operator cancels and releases), compared after every call.
//!
//! The model keeps no counters. A job not yet released is, as a pure function of its
//! parents' current states (parents have smaller indexes, so one pass in index order
//! settles everything): cancelled by an operator (sticky until a retry); cancelled if a
//! parent failed and its policy is `Cancel`; pending (held, with `Hold` and a failed
//! parent) while a parent is open; held while a parent failed under `Hold`; released
//! otherwise, for good (it is then queued at once, as a store does in the same step).
//! Everything the graph says is compared: each node's state, which jobs a call released
//! (each at most once), and the graph's own invariant check.

use std::collections::BTreeSet;

use leaseq_core::graph::{Fate, Graph, GraphError, NodeId, OnFailedParent, StepState};
use leaseq_core::MessageId;
use leaseq_test_kit::seeded::seed_config;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestRunner;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Open,
    Acked,
    Failed,
}

/// A released job's standing in the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InQueue {
    Queued,
    Acked,
    Dead,
    Cancelled,
}

#[derive(Clone, Debug)]
struct MNode {
    parents: Vec<usize>,
    policy: OnFailedParent,
    released: Option<InQueue>,
    by_operator: bool,
}

/// The model's view of a node: its state as `Graph::state` shows it.
fn message(i: usize) -> MessageId {
    MessageId::new(1000 + i as u64)
}

struct Model {
    nodes: Vec<MNode>,
}

impl Model {
    /// Each node's state and class, computed in index order; releases what is due and
    /// returns the newly released.
    fn settle(&mut self) -> (Vec<StepState>, BTreeSet<usize>) {
        let mut classes = Vec::with_capacity(self.nodes.len());
        let mut states = Vec::with_capacity(self.nodes.len());
        let mut released = BTreeSet::new();
        for i in 0..self.nodes.len() {
            let n = &self.nodes[i];
            let (state, class) = if let Some(q) = n.released {
                match q {
                    InQueue::Queued => (StepState::Queued(message(i)), Class::Open),
                    InQueue::Acked => (StepState::Acked(message(i)), Class::Acked),
                    InQueue::Dead => (StepState::DeadLettered(message(i)), Class::Failed),
                    InQueue::Cancelled => (StepState::Cancelled, Class::Failed),
                }
            } else if n.by_operator {
                (StepState::Cancelled, Class::Failed)
            } else {
                let pc: Vec<Class> = n.parents.iter().map(|&p| classes[p]).collect();
                let failed = pc.contains(&Class::Failed);
                let open = pc.contains(&Class::Open);
                match n.policy {
                    OnFailedParent::Cancel if failed => (StepState::Cancelled, Class::Failed),
                    OnFailedParent::Hold if failed => (StepState::Held, Class::Open),
                    _ if open => (StepState::Pending, Class::Open),
                    _ => {
                        released.insert(i);
                        (StepState::Queued(message(i)), Class::Open)
                    }
                }
            };
            classes.push(class);
            states.push(state);
        }
        for &i in &released {
            self.nodes[i].released = Some(InQueue::Queued);
        }
        (states, released)
    }
}

#[derive(Clone, Debug)]
enum Op {
    Settle(Index, Fate),
    Redriven(Index),
    Retry(Index),
    Cancel(Index),
    ReleaseHeld(Index),
}

fn policy() -> impl Strategy<Value = OnFailedParent> {
    prop_oneof![
        Just(OnFailedParent::Cancel),
        Just(OnFailedParent::Run),
        Just(OnFailedParent::Hold)
    ]
}

fn fate() -> impl Strategy<Value = Fate> {
    prop_oneof![
        3 => Just(Fate::Acked),
        1 => Just(Fate::DeadLettered),
        1 => Just(Fate::Cancelled)
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (any::<Index>(), fate()).prop_map(|(i, f)| Op::Settle(i, f)),
        1 => any::<Index>().prop_map(Op::Redriven),
        2 => any::<Index>().prop_map(Op::Retry),
        1 => any::<Index>().prop_map(Op::Cancel),
        1 => any::<Index>().prop_map(Op::ReleaseHeld),
    ]
}

/// A DAG: each node's parents (earlier nodes, at most 4) and policy.
fn dag() -> impl Strategy<Value = Vec<(Vec<Index>, OnFailedParent)>> {
    prop::collection::vec(
        (prop::collection::vec(any::<Index>(), 0..=4), policy()),
        1..24,
    )
}

/// Applies what a call released: queue each job (as the store would in the same step),
/// checking it is released once and by the model too.
fn queue_released(
    graph: &mut Graph<usize>,
    ids: &[NodeId],
    ready: Vec<(NodeId, usize)>,
    expected: &BTreeSet<usize>,
    seen: &mut BTreeSet<usize>,
) {
    let got: BTreeSet<usize> = ready.iter().map(|r| r.1).collect();
    assert_eq!(got.len(), ready.len(), "a job released twice in one call");
    assert_eq!(&got, expected, "released jobs differ from the model's");
    for (node, payload) in ready {
        assert_eq!(ids[payload], node, "payload handed out with another node");
        assert!(seen.insert(payload), "job {payload} released twice");
        graph
            .queued(node, message(payload))
            .expect("released job queues");
    }
}

fn run(dag: Vec<(Vec<Index>, OnFailedParent)>, ops: Vec<Op>) {
    let mut graph: Graph<usize> = Graph::new();
    let mut model = Model { nodes: Vec::new() };
    let mut ids = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, (parents, policy)) in dag.into_iter().enumerate() {
        let mut ps: Vec<usize> = if i == 0 {
            Vec::new()
        } else {
            parents.iter().map(|p| p.index(i)).collect()
        };
        ps.sort_unstable();
        ps.dedup();
        let nodes: Vec<NodeId> = ps.iter().map(|&p| ids[p]).collect();
        let added = graph
            .add(i, &nodes, policy)
            .expect("parents known, none twice");
        ids.push(added.node);
        model.nodes.push(MNode {
            parents: ps,
            policy,
            released: None,
            by_operator: false,
        });
        let (_, released) = model.settle();
        queue_released(&mut graph, &ids, added.changes.ready, &released, &mut seen);
        graph.check_invariants().unwrap();
    }
    let n = ids.len();
    for op in ops {
        let ready = match op {
            Op::Settle(i, f) => {
                let i = i.index(n);
                let m = &mut model.nodes[i];
                m.released = match (m.released, f) {
                    (Some(InQueue::Queued | InQueue::Dead), Fate::Acked) => Some(InQueue::Acked),
                    (Some(InQueue::Queued), Fate::DeadLettered) => Some(InQueue::Dead),
                    (Some(InQueue::Queued | InQueue::Dead), Fate::Cancelled) => {
                        Some(InQueue::Cancelled)
                    }
                    (r, _) => r,
                };
                graph.settle(message(i), f).ready
            }
            Op::Redriven(i) => {
                let i = i.index(n);
                if model.nodes[i].released == Some(InQueue::Dead) {
                    model.nodes[i].released = Some(InQueue::Queued);
                }
                graph.redriven(message(i)).ready
            }
            Op::Retry(i) => {
                let i = i.index(n);
                let (states, _) = model.clone_settle();
                let got = graph.retry(ids[i]);
                let m = &model.nodes[i];
                match (m.released, states[i]) {
                    (Some(InQueue::Dead), _) => {
                        let r = got.expect("a dead letter retries");
                        assert_eq!(r.redrive, Some(message(i)));
                        model.nodes[i].released = Some(InQueue::Queued);
                        r.changes.ready
                    }
                    (Some(InQueue::Cancelled), _) => {
                        assert_eq!(got.unwrap_err(), GraphError::PayloadGone(ids[i]));
                        Vec::new()
                    }
                    (None, StepState::Cancelled) => {
                        let cancels = m.policy == OnFailedParent::Cancel
                            && m.parents.iter().any(|&p| {
                                matches!(
                                    states[p],
                                    StepState::Cancelled | StepState::DeadLettered(_)
                                )
                            });
                        if cancels {
                            assert!(matches!(got, Err(GraphError::ParentFailed { .. })));
                            Vec::new()
                        } else {
                            model.nodes[i].by_operator = false;
                            got.expect("a cancelled job retries").changes.ready
                        }
                    }
                    _ => {
                        assert!(matches!(got, Err(GraphError::WrongState { .. })));
                        Vec::new()
                    }
                }
            }
            Op::Cancel(i) => {
                let i = i.index(n);
                let (states, _) = model.clone_settle();
                let got = graph.cancel(ids[i]);
                match states[i] {
                    StepState::Pending | StepState::Held => {
                        model.nodes[i].by_operator = true;
                        got.expect("a waiting job cancels").ready
                    }
                    StepState::Queued(m) => {
                        assert_eq!(got.unwrap_err(), GraphError::InQueue(m));
                        Vec::new()
                    }
                    _ => {
                        assert!(matches!(got, Err(GraphError::WrongState { .. })));
                        Vec::new()
                    }
                }
            }
            Op::ReleaseHeld(i) => {
                let i = i.index(n);
                let (states, _) = model.clone_settle();
                let got = graph.release_held(ids[i]);
                if states[i] == StepState::Held {
                    model.nodes[i].policy = OnFailedParent::Run;
                    got.expect("a held job releases").ready
                } else {
                    assert!(matches!(got, Err(GraphError::WrongState { .. })));
                    Vec::new()
                }
            }
        };
        let (states, released) = model.settle();
        queue_released(&mut graph, &ids, ready, &released, &mut seen);
        for (i, s) in states.iter().enumerate() {
            assert_eq!(graph.state(ids[i]), Some(*s), "node {i} after {op:?}");
        }
        graph.check_invariants().unwrap();
    }
}

impl Model {
    /// The states now, without releasing (the model is settled after every call).
    fn clone_settle(&self) -> (Vec<StepState>, BTreeSet<usize>) {
        Model {
            nodes: self.nodes.clone(),
        }
        .settle()
    }
}

#[test]
fn random_dags_match_the_model() {
    let mut runner = TestRunner::new(seed_config(2000, 0x00da_6000));
    runner
        .run(&(dag(), prop::collection::vec(op(), 0..80)), |(d, o)| {
            run(d, o);
            Ok(())
        })
        .unwrap();
}
