//! The dependency graph, case by case: chains, each policy for a failed parent, workflows
//! (their refusals, their state, cancel and retry), results and their bound, batches, and
//! the calls that must change nothing.

#[cfg(feature = "serde")]
use leaseq_core::graph::WorkflowSpec;
use leaseq_core::graph::{
    AddError, BatchOn, Fate, Graph, GraphError, NodeId, OnFailedParent, ResultError, StepState,
    MAX_RESULT_LEN,
};
use leaseq_core::MessageId;

fn m(n: u64) -> MessageId {
    MessageId::new(n)
}

/// Adds a job and, if released at once, queues it as `message`.
fn job(
    g: &mut Graph<&'static str>,
    name: &'static str,
    parents: &[NodeId],
    policy: OnFailedParent,
    message: u64,
) -> NodeId {
    let added = g.add(name, parents, policy).unwrap();
    for (node, _) in added.changes.ready {
        g.queued(node, m(message)).unwrap();
    }
    added.node
}

fn names<T: Copy>(ready: &[(NodeId, T)]) -> Vec<T> {
    ready.iter().map(|r| r.1).collect()
}

/// Two jobs with no parents, `a` (message 1) and `b` (message 2).
fn roots(g: &mut Graph<&'static str>) -> [NodeId; 2] {
    [
        job(g, "a", &[], OnFailedParent::Cancel, 1),
        job(g, "b", &[], OnFailedParent::Cancel, 2),
    ]
}

#[test]
fn a_chain_releases_each_step_once_after_its_parents_ack() {
    let mut g = Graph::new();
    let a = job(&mut g, "a", &[], OnFailedParent::Cancel, 1);
    let b = job(&mut g, "b", &[a], OnFailedParent::Cancel, 0);
    let c = job(&mut g, "c", &[a, b], OnFailedParent::Cancel, 0);
    assert_eq!(g.state(b), Some(StepState::Pending));
    let acked = g.settle(m(1), Fate::Acked);
    assert_eq!(names(&acked.ready), ["b"]);
    assert!(
        g.settle(m(1), Fate::Acked).is_empty(),
        "an ack told twice releases nothing"
    );
    assert!(
        g.settle(m(1), Fate::DeadLettered).is_empty(),
        "an ack is final"
    );
    g.queued(b, m(2)).unwrap();
    assert_eq!(g.state(c), Some(StepState::Pending), "c waits for b too");
    assert_eq!(names(&g.settle(m(2), Fate::Acked).ready), ["c"]);
    assert_eq!(g.state(a), Some(StepState::Acked(m(1))));
    g.check_invariants().unwrap();
}

#[test]
fn run_policy_runs_after_every_parent_finished_in_any_way() {
    let mut g = Graph::new();
    let [a, b] = roots(&mut g);
    let report = job(&mut g, "report", &[a, b], OnFailedParent::Run, 0);
    assert!(
        g.settle(m(1), Fate::Cancelled).ready.is_empty(),
        "b is still open"
    );
    assert_eq!(g.state(report), Some(StepState::Pending));
    assert_eq!(names(&g.settle(m(2), Fate::DeadLettered).ready), ["report"]);
}

#[test]
fn hold_policy_waits_for_an_operator_or_the_parent_brought_back() {
    let mut g = Graph::new();
    let a = job(&mut g, "a", &[], OnFailedParent::Cancel, 1);
    let b = job(&mut g, "b", &[a], OnFailedParent::Hold, 0);
    let out = g.settle(m(1), Fate::DeadLettered);
    assert_eq!(out.held, [b]);
    assert_eq!(g.state(b), Some(StepState::Held));
    // Redriven by an operator outside the graph: b waits again, then runs on the ack.
    assert!(g.redriven(m(1)).ready.is_empty());
    assert_eq!(g.state(b), Some(StepState::Pending));
    g.settle(m(1), Fate::DeadLettered);
    assert_eq!(g.state(b), Some(StepState::Held));
    // A dead letter redriven and acked without the graph hearing of the redrive.
    assert_eq!(names(&g.settle(m(1), Fate::Acked).ready), ["b"]);

    let c = job(&mut g, "c", &[], OnFailedParent::Cancel, 3);
    let d = job(&mut g, "d", &[c], OnFailedParent::Hold, 0);
    assert!(
        matches!(g.release_held(d), Err(GraphError::WrongState { .. })),
        "not held"
    );
    g.settle(m(3), Fate::Cancelled);
    assert_eq!(names(&g.release_held(d).unwrap().ready), ["d"]);
    assert_eq!(g.policy(d), Some(OnFailedParent::Run));
    g.check_invariants().unwrap();
}

#[test]
fn results_are_bounded_and_read_by_dependents() {
    let mut g = Graph::new();
    let [a, b] = roots(&mut g);
    let c = job(&mut g, "c", &[b, a], OnFailedParent::Cancel, 0);
    let big = vec![0u8; MAX_RESULT_LEN + 1];
    assert_eq!(
        g.record_result(m(1), &big),
        Err(ResultError::TooLong {
            len: MAX_RESULT_LEN + 1
        })
    );
    assert_eq!(g.result(a), None, "nothing recorded");
    g.record_result(m(1), &big[..MAX_RESULT_LEN]).unwrap();
    g.record_result(m(1), b"s3://a").unwrap();
    g.record_result(m(2), b"s3://b").unwrap();
    assert_eq!(
        g.record_result(m(9), b"x"),
        Err(ResultError::Untracked(m(9)))
    );
    g.settle(m(1), Fate::Acked);
    assert_eq!(
        g.record_result(m(1), b"late"),
        Err(ResultError::NotQueued(m(1)))
    );
    g.settle(m(2), Fate::Acked);
    let results = g.parent_results(c);
    assert_eq!(
        results,
        [(b, &b"s3://b"[..]), (a, &b"s3://a"[..])],
        "in the parents' order"
    );
}

#[test]
fn batch_counts_follow_each_child_once() {
    let mut g = Graph::new();
    let added = g.add_batch([1, 2, 3], 0, BatchOn::Success);
    assert_eq!(names(&added.changes.ready), [1, 2, 3]);
    for (i, (node, _)) in added.changes.ready.iter().enumerate() {
        g.queued(*node, m(i as u64)).unwrap();
    }
    let counts = |g: &Graph<i32>| {
        let c = g.batch_counts(added.batch).unwrap();
        (c.total, c.open, c.acked, c.dead_lettered, c.cancelled)
    };
    assert_eq!(counts(&g), (3, 3, 0, 0, 0));
    g.settle(m(0), Fate::Acked);
    g.settle(m(0), Fate::Acked);
    g.settle(m(1), Fate::DeadLettered);
    g.settle(m(1), Fate::DeadLettered);
    assert_eq!(counts(&g), (3, 1, 1, 1, 0), "a fate told twice counts once");
    assert_eq!(
        g.state(added.callback),
        Some(StepState::Held),
        "held as soon as one failed"
    );
    assert!(
        g.settle(m(2), Fate::Acked).ready.is_empty(),
        "held: one child is dead"
    );
    assert_eq!(g.state(added.callback), Some(StepState::Held));
    // The dead child redriven and acked (the graph not told of the redrive).
    let out = g.settle(m(1), Fate::Acked);
    assert_eq!(counts(&g), (3, 0, 3, 0, 0));
    assert_eq!(names(&out.ready), [0], "the callback, once");
    let outcomes: Vec<StepState> = g
        .batch_outcomes(added.batch)
        .unwrap()
        .map(|o| o.1)
        .collect();
    assert_eq!(
        outcomes,
        [
            StepState::Acked(m(0)),
            StepState::Acked(m(1)),
            StepState::Acked(m(2))
        ]
    );
    g.check_invariants().unwrap();

    let empty = g.add_batch(Vec::<i32>::new(), 7, BatchOn::Complete);
    assert_eq!(
        names(&empty.changes.ready),
        [7],
        "no child: the callback at once"
    );
}

#[test]
fn refusals_change_nothing() {
    let mut g = Graph::new();
    let a = job(&mut g, "a", &[], OnFailedParent::Cancel, 1);
    let ghost = NodeId::new(99);
    let refused = g.add("b", &[ghost], OnFailedParent::Cancel).unwrap_err();
    assert_eq!(
        refused,
        AddError {
            error: GraphError::UnknownNode(ghost),
            payload: "b"
        }
    );
    let refused = g.add("b", &[a, a], OnFailedParent::Cancel).unwrap_err();
    assert_eq!(refused.error, GraphError::DuplicateParent(a));
    assert_eq!(g.len(), 1);
    assert!(
        g.settle(m(5), Fate::Acked).is_empty(),
        "an untracked message"
    );
    assert!(!g.tracks(m(5)));
    assert_eq!(
        g.queued(a, m(2)).unwrap_err(),
        GraphError::WrongState {
            node: a,
            state: StepState::Queued(m(1))
        }
    );
    let b = job(&mut g, "b", &[a], OnFailedParent::Cancel, 0);
    assert_eq!(
        g.queued(b, m(1)).unwrap_err(),
        GraphError::WrongState {
            node: b,
            state: StepState::Pending
        }
    );
    assert_eq!(g.cancel(a).unwrap_err(), GraphError::InQueue(m(1)));
    g.check_invariants().unwrap();
}

#[test]
fn an_adopted_queue_job_is_a_parent() {
    let mut g: Graph<&str> = Graph::new();
    let parent = g.adopt(m(40));
    assert_eq!(g.adopt(m(40)), parent, "adopted once");
    let child = job(&mut g, "child", &[parent], OnFailedParent::Cancel, 0);
    assert!(g.tracks(m(40)));
    assert_eq!(names(&g.settle(m(40), Fate::Acked).ready), ["child"]);
    assert_eq!(g.state(child), Some(StepState::Ready));
}

#[test]
fn a_finished_batch_is_forgotten_whole() {
    let mut g = Graph::new();
    let added = g.add_batch(["x"], "done", BatchOn::Complete);
    let (child, _) = added.changes.ready[0];
    g.queued(child, m(1)).unwrap();
    assert_eq!(
        g.forget_batch(added.batch),
        Err(GraphError::Unfinished(child))
    );
    let (callback, _) = g.settle(m(1), Fate::DeadLettered).ready[0];
    g.queued(callback, m(2)).unwrap();
    g.settle(m(2), Fate::Acked);
    g.forget_batch(added.batch).unwrap();
    assert!(g.is_empty() && !g.tracks(m(1)) && !g.tracks(m(2)));
    assert_eq!(
        g.forget_batch(added.batch),
        Err(GraphError::UnknownBatch(added.batch))
    );
    g.check_invariants().unwrap();
}

#[test]
fn restore_refuses_records_that_are_no_graph_and_heals_a_lost_release() {
    use leaseq_core::graph::NodeRecord;
    let mut g = Graph::new();
    let a = job(&mut g, "a", &[], OnFailedParent::Cancel, 1);
    let b = job(&mut g, "b", &[a], OnFailedParent::Cancel, 0);
    type Records = Vec<(NodeRecord, Option<&'static str>)>;
    let records: Records = g.records().map(|(r, p)| (r, p.copied())).collect();
    assert_eq!(records[1].0.waiting, 1, "b waits for a");

    let with = |f: &dyn Fn(&mut Records)| {
        let mut r = records.clone();
        f(&mut r);
        Graph::restore(r).map(|_| ()).unwrap_err()
    };
    assert_eq!(
        with(&|r| r[1].0.parents = vec![NodeId::new(9)]),
        GraphError::UnknownNode(NodeId::new(9))
    );
    assert_eq!(
        with(&|r| r[1].0.parents = vec![a, a]),
        GraphError::DuplicateParent(a)
    );
    assert_eq!(
        with(&|r| r.push(r[0].clone())),
        GraphError::DuplicateNode(a)
    );
    assert_eq!(with(&|r| r[0].0.parents = vec![b]), GraphError::Cycle(a));
    assert!(matches!(
        with(&|r| r[1].1 = None),
        GraphError::WrongState { .. }
    ));
    let far = NodeId::new(u64::MAX);
    assert_eq!(
        with(&|r| r[1].0.node = far),
        GraphError::IdSpan {
            first: a,
            last: far
        },
        "refused, not an allocation of 2^64 slots"
    );
    assert!(matches!(
        with(&|r| r[0].0.message = Some(m(2))),
        GraphError::WrongState { .. }
    ));

    // The parent's ack kept, the release lost (a store that did not commit them as one):
    // the restore releases b.
    let mut lost = records.clone();
    lost[0].0.state = StepState::Acked(m(1));
    let restored = Graph::restore(lost).unwrap();
    assert_eq!(names(&restored.changes.ready), ["b"]);
    restored.graph.check_invariants().unwrap();
}

#[cfg(feature = "serde")]
#[test]
fn a_record_round_trips_through_serde() {
    let mut g = Graph::new();
    let wf = g
        .add_workflow(WorkflowSpec::new().step("a", 1u8, &[]).step("b", 2, &["a"]))
        .unwrap();
    for (node, _) in wf.changes.ready {
        g.queued(node, m(3)).unwrap();
    }
    for (record, _) in g.records() {
        let json = serde_json::to_string(&record).unwrap();
        assert_eq!(
            serde_json::from_str::<leaseq_core::graph::NodeRecord>(&json).unwrap(),
            record
        );
    }
}
