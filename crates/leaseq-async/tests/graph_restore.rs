//! The graph's records for a durable store (issue 33): `MemoryStore::journal_graph`,
//! `take_graph_changes` (each changed node's record, each released job copied with its
//! message) and `restore_graph` (a release lost in a crash redone; a queued job whose
//! message is gone told acked; records that are no graph refused).

use std::time::Duration;

use leaseq_async::dependencies::{DependencyStore, NodeId, OnFailedParent, Parent, StepState};
use leaseq_async::{Config, LeaseQueue, MessageId, SimRuntime};
use leaseq_core::graph::NodeRecord;
use leaseq_test_kit::sim;

type Q = LeaseQueue<&'static str, SimRuntime>;

fn queue(rt: &SimRuntime) -> Q {
    sim::queue(rt, Config::new(Duration::from_secs(10)))
}

/// A parent acked (`message`) and a child waiting for it with its payload.
fn acked_parent_and_child(message: MessageId) -> Vec<(NodeRecord, Option<&'static str>)> {
    let mut parent = NodeRecord::new(
        NodeId::new(0),
        OnFailedParent::Cancel,
        StepState::Acked(message),
    );
    parent.message = Some(message);
    let mut child = NodeRecord::new(NodeId::new(1), OnFailedParent::Cancel, StepState::Pending);
    child.parents = vec![NodeId::new(0)];
    vec![(parent, None), (child, Some("child"))]
}

#[test]
fn changes_name_each_changed_node_and_each_released_job() {
    sim::run(|rt| async move {
        let q = queue(&rt);
        q.store().journal_graph();
        let parent = q.try_push("parent").unwrap();
        let child = q
            .store()
            .push_after("child", &[Parent::Message(parent)], OnFailedParent::Cancel)
            .await
            .unwrap();
        let changes = q.store().take_graph_changes();
        let nodes: Vec<NodeId> = changes.records.iter().map(|r| r.0).collect();
        assert_eq!(
            nodes.len(),
            2,
            "the adopted parent and the child: {nodes:?}"
        );
        assert!(changes.released.is_empty());
        let (record, payload) = changes.records[1].1.clone().unwrap();
        assert_eq!((record.state, payload), (StepState::Pending, Some("child")));
        assert!(q.store().take_graph_changes().is_empty(), "taken once");

        let d = q.receive().await.unwrap();
        d.ack().await.unwrap();
        let changes = q.store().take_graph_changes();
        let released = q.store().job_state(child).await.unwrap();
        let Some(StepState::Queued(m)) = released else {
            panic!("{released:?}");
        };
        assert_eq!(changes.released, [(m, "child")]);
        let states: Vec<StepState> = changes
            .records
            .iter()
            .map(|r| r.1.as_ref().unwrap().0.state)
            .collect();
        assert_eq!(states, [StepState::Acked(parent), StepState::Queued(m)]);
        let (_, payload) = changes.records[1].1.clone().unwrap();
        assert_eq!(payload, None, "a released job's item is in the queue");
    });
}

#[test]
fn a_release_lost_in_a_crash_is_redone_at_restore() {
    sim::run(|rt| async move {
        let q = queue(&rt);
        q.store()
            .restore_graph(acked_parent_and_child(MessageId::new(5)))
            .unwrap();
        let d = q.try_receive().expect("the child released by the restore");
        assert_eq!(*d.item(), "child");
        let changes = q.store().take_graph_changes();
        assert_eq!(changes.released, [(d.id(), "child")], "journaled");
        let state = q.store().job_state(NodeId::new(1)).await.unwrap();
        assert_eq!(state, Some(StepState::Queued(d.id())));
        assert!(q.try_receive().is_none(), "once");
    });
}

#[test]
fn a_queued_parent_whose_message_is_gone_is_told_acked() {
    sim::run(|rt| async move {
        let q = queue(&rt);
        let mut records = acked_parent_and_child(MessageId::new(7));
        records[0].0.state = StepState::Queued(MessageId::new(7));
        q.store().restore_graph(records).unwrap();
        let state = q.store().job_state(NodeId::new(0)).await.unwrap();
        assert_eq!(state, Some(StepState::Acked(MessageId::new(7))));
        assert_eq!(*q.try_receive().unwrap().item(), "child");
    });
}

#[test]
fn records_that_are_no_graph_are_refused() {
    sim::run(|rt| async move {
        let q = queue(&rt);
        let mut records = acked_parent_and_child(MessageId::new(5));
        records[0].0.parents = vec![NodeId::new(1)]; // a circle
        assert!(q.store().restore_graph(records).is_err());
        assert!(q.try_receive().is_none());
        assert_eq!(q.store().job_state(NodeId::new(1)).await.unwrap(), None);
    });
}
