//! Jobs that wait for other jobs on Postgres (issue 33): a chain with results, each
//! policy for a failed parent, workflows (one commit, cycles refused, cancel, retry),
//! batches with exact counts, and plain jobs left untouched by the graph.

use leaseq_test_kit::pg as common;

use std::time::Duration;

use leaseq_async::dependencies::{
    BatchId, BatchOn, DependencyError, DependencyStore, OnFailedParent, Parent, StepState,
    WorkflowId, WorkflowSpec,
};
use leaseq_core::graph::{GraphError, WorkflowError};
use leaseq_postgres::{PgDelivery, PgQueue};

async fn next(q: &PgQueue<Vec<u8>>) -> PgDelivery<Vec<u8>> {
    match q.receive_timeout(Duration::from_secs(10)).await {
        Ok(d) => d,
        Err(e) => panic!(
            "no delivery ({e:?}); last error {:?}",
            q.store().last_error()
        ),
    }
}

#[test]
fn a_chain_runs_in_order_and_hands_results_on() {
    common::with_server(|url| async move {
        let q = common::open_one_try(&url, "graph_chain").await;
        let g = q.store();
        let plain = q.push(b"plain".to_vec()).await.unwrap();
        let a = q.push(b"a".to_vec()).await.unwrap();
        let b = g
            .push_after(b"b".to_vec(), &[Parent::Message(a)], OnFailedParent::Cancel)
            .await
            .unwrap();
        let c = g
            .push_after(b"c".to_vec(), &[Parent::Job(b)], OnFailedParent::Cancel)
            .await
            .unwrap();
        assert_eq!(g.job_state(b).await.unwrap(), Some(StepState::Pending));
        assert_eq!(
            g.job_of(plain).await.unwrap(),
            None,
            "a plain job is not adopted"
        );
        let mut first = Vec::new();
        for _ in 0..2 {
            let d = next(&q).await;
            first.push(d.item().clone());
            if d.item() == b"a" {
                g.record_result(d.id(), b"s3://a").await.unwrap();
            }
            d.ack().await.unwrap();
        }
        first.sort();
        assert_eq!(
            first,
            [b"a".to_vec(), b"plain".to_vec()],
            "b only after a's ack"
        );
        let d = next(&q).await;
        assert_eq!(d.item(), b"b");
        d.ack().await.unwrap();
        let d = next(&q).await;
        assert_eq!(d.item(), b"c");
        let node_c = g.job_of(d.id()).await.unwrap();
        assert_eq!(node_c, Some(c));
        let outcomes = g.parent_outcomes(d.id()).await.unwrap().unwrap();
        assert_eq!(outcomes.len(), 1);
        assert_eq!(outcomes[0].node, b);
        let b_parents = {
            let StepState::Acked(bm) = outcomes[0].state else {
                panic!("b is {:?}", outcomes[0].state)
            };
            g.parent_outcomes(bm).await.unwrap().unwrap()
        };
        assert_eq!(b_parents[0].result.as_deref(), Some(&b"s3://a"[..]));
        let too_long = vec![0; leaseq_async::dependencies::MAX_RESULT_LEN + 1];
        assert!(matches!(
            g.record_result(d.id(), &too_long).await,
            Err(DependencyError::Result(_))
        ));
        let c_message = d.id();
        d.ack().await.unwrap();
        assert!(matches!(
            g.record_result(c_message, b"late").await,
            Err(DependencyError::Result(_))
        ));
        common::nothing_comes(&q).await;
    });
}

/// A parent dead-lettered: `Cancel` cancels the child and its own child, `Run` releases it,
/// `Hold` holds it until the parent is redriven and acked.
#[test]
fn each_policy_for_a_failed_parent() {
    common::with_server(|url| async move {
        let q = common::open_one_try(&url, "graph_policy").await;
        let g = q.store();
        let parent = q.push(b"parent".to_vec()).await.unwrap();
        let p = [Parent::Message(parent)];
        let cancel = g
            .push_after(b"cancel".to_vec(), &p, OnFailedParent::Cancel)
            .await
            .unwrap();
        let below = g
            .push_after(
                b"below".to_vec(),
                &[Parent::Job(cancel)],
                OnFailedParent::Run,
            )
            .await
            .unwrap();
        let run = g
            .push_after(b"run".to_vec(), &p, OnFailedParent::Run)
            .await
            .unwrap();
        let hold = g
            .push_after(b"hold".to_vec(), &p, OnFailedParent::Hold)
            .await
            .unwrap();
        let d = next(&q).await;
        assert_eq!(d.item(), b"parent");
        d.dead_letter("broken").await.unwrap();
        assert_eq!(
            g.job_state(cancel).await.unwrap(),
            Some(StepState::Cancelled)
        );
        assert_eq!(g.job_state(hold).await.unwrap(), Some(StepState::Held));
        // `below` runs anyway (Run), after its cancelled parent.
        let mut got = vec![next(&q).await, next(&q).await];
        got.sort_by(|a, b| a.item().cmp(b.item()));
        assert_eq!(got[0].item(), b"below");
        assert_eq!(got[1].item(), b"run");
        assert!(matches!(
            g.job_state(run).await.unwrap(),
            Some(StepState::Queued(_))
        ));
        assert!(matches!(
            g.job_state(below).await.unwrap(),
            Some(StepState::Queued(_))
        ));
        for d in got {
            d.ack().await.unwrap();
        }
        common::nothing_comes(&q).await;
        q.redrive(parent).await.unwrap();
        assert_eq!(g.job_state(hold).await.unwrap(), Some(StepState::Pending));
        let d = next(&q).await;
        assert_eq!(d.item(), b"parent");
        d.ack().await.unwrap();
        // `hold` goes on, and `cancel`, revived by the redrive, is released by the ack too.
        let mut got = vec![next(&q).await, next(&q).await];
        got.sort_by(|a, b| a.item().cmp(b.item()));
        assert_eq!(
            (got[0].item(), got[1].item()),
            (&b"cancel".to_vec(), &b"hold".to_vec())
        );
        for d in got {
            d.ack().await.unwrap();
        }
        common::nothing_comes(&q).await;
    });
}

#[test]
fn a_workflow_is_one_commit_checked_cancelled_and_retried() {
    common::with_server(|url| async move {
        let q = common::open_one_try(&url, "graph_workflow").await;
        let g = q.store();
        let cycle =
            WorkflowSpec::new()
                .step("a", b"a".to_vec(), &["b"])
                .step("b", b"b".to_vec(), &["a"]);
        let refused = g.push_workflow(cycle).await.unwrap_err();
        assert!(matches!(
            refused.error,
            DependencyError::Workflow(WorkflowError::Cycle(_))
        ));
        assert_eq!(refused.payload.len(), 2, "the spec handed back");
        common::nothing_comes(&q).await;

        let spec = WorkflowSpec::new()
            .step("join", b"join".to_vec(), &["left", "right"])
            .step("left", b"left".to_vec(), &["root"])
            .step("right", b"right".to_vec(), &["root"])
            .step("root", b"root".to_vec(), &[]);
        let wf = g.push_workflow(spec).await.unwrap();
        // Listed for the queue in id order (an operator's view reads it).
        let before = WorkflowId::new(wf.get() - 1);
        assert_eq!(g.workflows(Some(before), 10).await.unwrap(), [wf]);
        assert_eq!(g.workflows(Some(wf), 10).await.unwrap(), []);
        let steps = g.workflow_steps(wf).await.unwrap().unwrap();
        let names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["join", "left", "right", "root"], "the spec's order");
        let d = next(&q).await;
        assert_eq!(d.item(), b"root");
        d.ack().await.unwrap();
        let (l, r) = (next(&q).await, next(&q).await);
        let (left, right) = if l.item() == b"left" { (l, r) } else { (r, l) };
        left.ack().await.unwrap();
        right.dead_letter("right failed").await.unwrap();
        let steps = g.workflow_steps(wf).await.unwrap().unwrap();
        assert_eq!(
            steps[0].state,
            StepState::Cancelled,
            "join: a parent failed"
        );
        assert!(matches!(steps[2].state, StepState::DeadLettered(_)));
        // Retry the failed step: it runs again, and revives `join`.
        g.retry_step(wf, "right").await.unwrap();
        assert_eq!(
            g.retry_step(wf, "nope").await.unwrap_err(),
            DependencyError::Graph(GraphError::UnknownStep("nope".into()))
        );
        let d = next(&q).await;
        assert_eq!(d.item(), b"right");
        d.ack().await.unwrap();
        let d = next(&q).await;
        assert_eq!(d.item(), b"join");
        d.ack().await.unwrap();
        g.forget_workflow(wf).await.unwrap();
        assert_eq!(g.workflow_steps(wf).await.unwrap(), None);

        // Cancel: a queued step and a pending one.
        let spec = WorkflowSpec::new().step("one", b"one".to_vec(), &[]).step(
            "two",
            b"two".to_vec(),
            &["one"],
        );
        let wf = g.push_workflow(spec).await.unwrap();
        let cancelled = g.cancel_workflow(wf).await.unwrap();
        assert_eq!(cancelled.len(), 2);
        common::nothing_comes(&q).await;
        // A cancelled step that was queued kept its payload: a retry pushes it again.
        g.retry_step(wf, "one").await.unwrap();
        let d = next(&q).await;
        assert_eq!(d.item(), b"one");
        d.ack().await.unwrap();
        assert_eq!(
            g.workflow_steps(wf).await.unwrap().unwrap()[1].state,
            StepState::Cancelled,
            "two was cancelled by the operator, not by its parent"
        );
    });
}

#[test]
fn batches_count_exactly_and_call_back_once() {
    common::with_server(|url| async move {
        let q = common::open_one_try(&url, "graph_batch").await;
        let g = q.store();
        for on in [BatchOn::Success, BatchOn::Complete] {
            // 150 children: over 64, so the callback's counters are split (graph_shards).
            let kids: Vec<Vec<u8>> = (0..150u8).map(|i| vec![i]).collect();
            let batch = g.push_batch(kids, b"callback".to_vec(), on).await.unwrap();
            let before = BatchId::new(batch.get() - 1);
            assert_eq!(g.batches(Some(before), 10).await.unwrap(), [batch]);
            let (_, read_on) = g.batch_callback(batch).await.unwrap().unwrap();
            assert_eq!(read_on, on);
            let mut dead = None;
            for _ in 0..150 {
                let d = next(&q).await;
                if d.item()[0] == 7 {
                    dead = Some(d.id());
                    d.dead_letter("seven").await.unwrap();
                } else {
                    d.ack().await.unwrap();
                }
            }
            let counts = g.batch_counts(batch).await.unwrap().unwrap();
            assert_eq!((counts.total, counts.open, counts.acked), (150, 0, 149));
            assert_eq!((counts.dead_lettered, counts.cancelled), (1, 0));
            if on == BatchOn::Success {
                common::nothing_comes(&q).await; // held for the dead child
                q.redrive(dead.unwrap()).await.unwrap();
                let d = next(&q).await;
                assert_eq!(d.item(), &[7]);
                d.ack().await.unwrap();
                let counts = g.batch_counts(batch).await.unwrap().unwrap();
                assert_eq!((counts.acked, counts.dead_lettered), (150, 0));
            }
            let d = next(&q).await;
            assert_eq!(d.item(), b"callback");
            let outcomes = g.parent_outcomes(d.id()).await.unwrap().unwrap();
            assert_eq!(outcomes.len(), 150);
            let acked = outcomes
                .iter()
                .filter(|o| matches!(o.state, StepState::Acked(_)))
                .count();
            assert_eq!(acked, if on == BatchOn::Success { 150 } else { 149 });
            d.ack().await.unwrap();
            common::nothing_comes(&q).await;
            g.forget_batch(batch).await.unwrap();
            assert_eq!(g.batch_counts(batch).await.unwrap(), None);
        }
    });
}

#[test]
fn refusals_hand_the_payload_back() {
    common::with_server(|url| async move {
        let q = common::open_one_try(&url, "graph_refusals").await;
        let g = q.store();
        let a = g
            .push_after(b"a".to_vec(), &[], OnFailedParent::Cancel)
            .await
            .unwrap();
        let twice = [Parent::Job(a), Parent::Job(a)];
        let r = g
            .push_after(b"x".to_vec(), &twice, OnFailedParent::Cancel)
            .await
            .unwrap_err();
        assert_eq!(
            r.error,
            DependencyError::Graph(GraphError::DuplicateParent(a))
        );
        assert_eq!(r.payload, b"x");
        let ghost = leaseq_async::dependencies::NodeId::new(u64::MAX >> 2);
        let r = g
            .push_after(b"y".to_vec(), &[Parent::Job(ghost)], OnFailedParent::Cancel)
            .await
            .unwrap_err();
        assert_eq!(
            r.error,
            DependencyError::Graph(GraphError::UnknownNode(ghost))
        );
        let d = next(&q).await;
        assert_eq!(d.item(), b"a");
        d.ack().await.unwrap();
        common::nothing_comes(&q).await;
        q.close().await.unwrap();
        let r = g
            .push_after(b"z".to_vec(), &[], OnFailedParent::Cancel)
            .await
            .unwrap_err();
        assert_eq!(r.error, DependencyError::Closed);
    });
}
