//! Workflows in the graph: a DAG of named steps added as one unit (refused whole, spec
//! handed back, with a typed error naming the cycle, the unknown or the duplicate name),
//! in any order; its state by step; cancel what is left; retry a failed step and what it
//! cancelled. And random DAGs given as specs in random order, with and without a cycle.

use std::collections::BTreeSet;

use leaseq_core::graph::{Fate, Graph, GraphError, NodeId, StepState, WorkflowError, WorkflowSpec};
use leaseq_core::MessageId;
use leaseq_test_kit::dag::parents_of;
use leaseq_test_kit::seeded::seed_config;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestRunner;

fn m(n: u64) -> MessageId {
    MessageId::new(n)
}

fn names<T: Copy>(ready: &[(NodeId, T)]) -> Vec<T> {
    ready.iter().map(|r| r.1).collect()
}

#[test]
fn cancel_policy_cancels_downstream_and_a_retry_revives_it() {
    let spec = WorkflowSpec::new()
        .step("a", "a", &[])
        .step("b", "b", &["a"])
        .step("c", "c", &["b"]);
    let mut g = Graph::new();
    let wf = g.add_workflow(spec).unwrap();
    let a = g.step(wf.workflow, "a").unwrap();
    assert_eq!(names(&wf.changes.ready), ["a"]);
    g.queued(a, m(1)).unwrap();
    let dead = g.settle(m(1), Fate::DeadLettered);
    let (b, c) = (
        g.step(wf.workflow, "b").unwrap(),
        g.step(wf.workflow, "c").unwrap(),
    );
    assert_eq!(dead.cancelled, [b, c], "cancelled downstream, in order");
    let states: Vec<_> = g
        .workflow_steps(wf.workflow)
        .unwrap()
        .map(|s| (s.0, s.2))
        .collect();
    assert_eq!(
        states,
        [
            ("a", StepState::DeadLettered(m(1))),
            ("b", StepState::Cancelled),
            ("c", StepState::Cancelled)
        ]
    );
    assert_eq!(
        g.retry(c).unwrap_err(),
        GraphError::ParentFailed { node: c, parent: b }
    );
    let retried = g.retry_step(wf.workflow, "a").unwrap();
    assert_eq!(
        retried.redrive,
        Some(m(1)),
        "the store redrives the dead letter"
    );
    assert_eq!(retried.changes.revived, [b, c]);
    assert_eq!(g.state(b), Some(StepState::Pending));
    assert_eq!(names(&g.settle(m(1), Fate::Acked).ready), ["b"]);
    g.check_invariants().unwrap();
}

#[test]
fn a_refused_workflow_adds_nothing_and_hands_the_spec_back() {
    let cases: Vec<(WorkflowSpec<u8>, WorkflowError)> = vec![
        (WorkflowSpec::new(), WorkflowError::Empty),
        (
            WorkflowSpec::new().step("", 0, &[]),
            WorkflowError::BadName("".into()),
        ),
        (
            WorkflowSpec::new().step("x".repeat(129), 0, &[]),
            WorkflowError::BadName("x".repeat(129)),
        ),
        (
            WorkflowSpec::new().step("a", 0, &[]).step("a", 1, &[]),
            WorkflowError::DuplicateStep("a".into()),
        ),
        (
            WorkflowSpec::new().step("a", 0, &["nope"]),
            WorkflowError::UnknownParent {
                step: "a".into(),
                parent: "nope".into(),
            },
        ),
        (
            WorkflowSpec::new()
                .step("a", 0, &[])
                .step("b", 1, &["a", "a"]),
            WorkflowError::DuplicateParent {
                step: "b".into(),
                parent: "a".into(),
            },
        ),
        (
            WorkflowSpec::new().step("a", 0, &["a"]),
            WorkflowError::Cycle(vec!["a".into()]),
        ),
        (
            WorkflowSpec::new()
                .step("start", 0, &[])
                .step("a", 1, &["start", "c"])
                .step("b", 2, &["a"])
                .step("c", 3, &["b"]),
            WorkflowError::Cycle(vec!["a".into(), "c".into(), "b".into()]),
        ),
    ];
    let mut g = Graph::new();
    for (spec, error) in cases {
        let len = spec.len();
        let refused = g.add_workflow(spec).unwrap_err();
        assert_eq!(refused.error, error);
        assert_eq!(refused.spec.len(), len, "the spec comes back whole");
        assert!(g.is_empty(), "nothing added for {error}");
    }
    // The same ids are used by the next workflow accepted: nothing was taken.
    let wf = g
        .add_workflow(WorkflowSpec::new().step("a", 0, &[]))
        .unwrap();
    assert_eq!(wf.workflow.get(), 0);
    assert_eq!(g.step(wf.workflow, "a"), Some(NodeId::new(0)));
}

#[test]
fn steps_may_be_given_in_any_order() {
    let spec = WorkflowSpec::new()
        .step("notify", "notify", &["upload"])
        .step("upload", "upload", &["resize"])
        .step("resize", "resize", &[]);
    let mut g = Graph::new();
    let wf = g.add_workflow(spec).unwrap();
    assert_eq!(names(&wf.changes.ready), ["resize"]);
    let upload = g.step(wf.workflow, "upload").unwrap();
    let resize = g.step(wf.workflow, "resize").unwrap();
    assert_eq!(g.parents(upload), Some(&[resize][..]));
    let order: Vec<&str> = g
        .workflow_steps(wf.workflow)
        .unwrap()
        .map(|s| s.0)
        .collect();
    assert_eq!(
        order,
        ["notify", "upload", "resize"],
        "read back in the spec's order"
    );
}

#[test]
fn cancelling_a_workflow_cancels_what_waits_and_lists_what_is_queued() {
    let spec = WorkflowSpec::new()
        .step("a", "a", &[])
        .step("b", "b", &[])
        .step("c", "c", &["a", "b"]);
    let mut g = Graph::new();
    let wf = g.add_workflow(spec).unwrap();
    let mut n = 0;
    for (node, _) in wf.changes.ready {
        n += 1;
        g.queued(node, m(n)).unwrap();
    }
    g.settle(m(1), Fate::Acked);
    let c = g.step(wf.workflow, "c").unwrap();
    let out = g.cancel_workflow(wf.workflow).unwrap();
    assert_eq!(out.cancelled, [c]);
    assert_eq!(out.in_queue, [m(2)], "b is the queue's to cancel");
    assert!(g.forget_workflow(wf.workflow).is_err(), "b is still open");
    g.settle(m(2), Fate::Cancelled);
    // An operator's cancel is not undone by a parent coming back.
    assert_eq!(
        g.retry(g.step(wf.workflow, "b").unwrap()).unwrap_err(),
        GraphError::PayloadGone(g.step(wf.workflow, "b").unwrap())
    );
    g.forget_workflow(wf.workflow).unwrap();
    assert!(g.is_empty());
    assert!(!g.tracks(m(1)));
    g.check_invariants().unwrap();
}

/// A random DAG given as a workflow spec in a random order is accepted with every step's
/// parents as named; the same DAG with an edge from a step back to one of its ancestors
/// (itself included) is refused as a cycle that is one, and adds nothing.
#[test]
fn random_workflows_are_accepted_or_refused_as_a_whole() {
    let case = (
        prop::collection::vec(prop::collection::vec(any::<Index>(), 0..=3), 1..14),
        Just(()).prop_perturb(|_, mut rng| rng.next_u64()),
        any::<Option<(Index, Index)>>(),
    );
    let mut runner = TestRunner::new(seed_config(1000, 0x00da_6003));
    runner
        .run(&case, |(dag, shuffle, back_edge)| {
            let n = dag.len();
            let mut parents: Vec<Vec<usize>> = dag
                .iter()
                .enumerate()
                .map(|(i, ps)| parents_of(i, ps))
                .collect();
            // An edge from `from` to `to`, a step at or after it in index order that
            // descends from it: a cycle through `from`.
            let cycle = back_edge.and_then(|(a, b)| {
                let from = a.index(n);
                let mut below = vec![false; n];
                below[from] = true;
                for i in from + 1..n {
                    below[i] = parents[i].iter().any(|&p| below[p]);
                }
                let descendants: Vec<usize> = (from..n).filter(|&i| below[i]).collect();
                let to = descendants[b.index(descendants.len())];
                (!parents[from].contains(&to)).then(|| {
                    parents[from].push(to);
                    from
                })
            });
            let mut order: Vec<usize> = (0..n).collect();
            let mut x = shuffle;
            for i in (1..n).rev() {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                order.swap(i, (x >> 33) as usize % (i + 1));
            }
            let name = |i: usize| format!("s{i}");
            let mut spec = WorkflowSpec::new();
            for &i in &order {
                let after: Vec<String> = parents[i].iter().map(|&p| name(p)).collect();
                let after: Vec<&str> = after.iter().map(String::as_str).collect();
                spec = spec.step(name(i), i, &after);
            }
            let mut graph: Graph<usize> = Graph::new();
            match (graph.add_workflow(spec), cycle) {
                (Ok(added), None) => {
                    let wf = added.workflow;
                    for (i, ps) in parents.iter().enumerate() {
                        let node = graph.step(wf, &name(i)).unwrap();
                        let want: Vec<NodeId> = ps
                            .iter()
                            .map(|&p| graph.step(wf, &name(p)).unwrap())
                            .collect();
                        assert_eq!(graph.parents(node).unwrap(), want.as_slice());
                    }
                    let released: BTreeSet<usize> =
                        added.changes.ready.iter().map(|r| r.1).collect();
                    let roots: BTreeSet<usize> =
                        (0..n).filter(|&i| parents[i].is_empty()).collect();
                    assert_eq!(released, roots);
                    graph.check_invariants().unwrap();
                }
                (Err(refused), Some(_)) => {
                    assert!(graph.is_empty(), "a refused workflow adds nothing");
                    assert_eq!(refused.spec.len(), n);
                    let WorkflowError::Cycle(steps) = refused.error else {
                        panic!("refused for {:?}, not the cycle", refused.error);
                    };
                    let idx: Vec<usize> = steps.iter().map(|s| s[1..].parse().unwrap()).collect();
                    for (k, &s) in idx.iter().enumerate() {
                        let next = idx[(k + 1) % idx.len()];
                        assert!(parents[s].contains(&next), "{s} does not wait for {next}");
                    }
                }
                (got, cycle) => panic!("cycle {cycle:?} but {:?}", got.map(|a| a.workflow)),
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn workflows_and_batches_are_listed_in_id_order_from_after_and_forgotten_ones_go() {
    use leaseq_core::graph::{BatchId, BatchOn, WorkflowId};
    let mut g = Graph::new();
    let one = |g: &mut Graph<&str>| {
        g.add_workflow(WorkflowSpec::new().step("a", "a", &[]))
            .unwrap()
            .workflow
    };
    let (w0, w1, w2) = (one(&mut g), one(&mut g), one(&mut g));
    let b0 = g.add_batch(["x"], "cb", BatchOn::Complete).batch;
    let b1 = g
        .add_batch(Vec::<&str>::new(), "cb", BatchOn::Success)
        .batch;
    assert_eq!(g.workflow_ids(None).collect::<Vec<_>>(), [w0, w1, w2]);
    assert_eq!(g.workflow_ids(Some(w0)).collect::<Vec<_>>(), [w1, w2]);
    assert_eq!(g.workflow_ids(Some(w2)).count(), 0);
    assert_eq!(g.workflow_ids(Some(WorkflowId::new(u64::MAX))).count(), 0);
    assert_eq!(WorkflowId::new(w1.get()), w1, "named again by its number");
    assert_eq!(g.batch_ids(None).collect::<Vec<_>>(), [b0, b1]);
    assert_eq!(g.batch_ids(Some(b0)).collect::<Vec<_>>(), [b1]);
    assert_eq!(g.batch_ids(Some(BatchId::new(u64::MAX))).count(), 0);

    // A finished workflow forgotten is no longer listed.
    let a = g.step(w1, "a").unwrap();
    g.queued(a, m(1)).unwrap();
    g.settle(m(1), Fate::Acked);
    g.forget_workflow(w1).unwrap();
    assert_eq!(g.workflow_ids(None).collect::<Vec<_>>(), [w0, w2]);
}
