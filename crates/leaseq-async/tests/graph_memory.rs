//! Jobs that wait for other jobs on the memory store (issue 33): a workflow through a Pool,
//! a batch of 1,000 children into one callback, a failed parent under each policy, a
//! dependent never receivable before its parent's ack. Virtual time.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::dependencies::{
    BatchCounts, BatchOn, DependencyError, DependencyStore, OnFailedParent, Parent, StepState,
    WorkflowId, WorkflowSpec,
};
use leaseq_async::{Config, JobError, LeaseQueue, Pool, Runtime, SimRuntime};
use leaseq_test_kit::sim::{self, sleep};

fn config() -> Config {
    Config::new(Duration::from_secs(10))
}

/// A 3-step workflow through a Pool of two workers: each step runs after the one before it
/// is acked, reads the result its parent recorded, and the handle reads every step acked.
/// Receives the next item and dead-letters it ("down"), then lets the graph settle (1 ms of
/// virtual time).
async fn dead_letter_next<T: Clone + Send + 'static>(
    rt: &SimRuntime,
    q: &LeaseQueue<T, SimRuntime>,
) {
    q.receive()
        .await
        .unwrap()
        .dead_letter("down")
        .await
        .unwrap();
    sleep(rt, Duration::from_millis(1)).await;
}

#[test]
fn a_three_step_workflow_runs_in_order_through_a_pool() {
    sim::run(|rt| async move {
        let q: LeaseQueue<&'static str, SimRuntime> = sim::queue(&rt, config());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let pool = Pool::builder(q.clone()).workers(2).spawn({
            let (q, seen) = (q.clone(), seen.clone());
            move |job| {
                let (q, seen) = (q.clone(), seen.clone());
                async move {
                    let graph = q.store();
                    let parents = graph
                        .parent_outcomes(job.id)
                        .await
                        .unwrap()
                        .unwrap_or_default();
                    let input = parents.first().and_then(|p| p.result.clone());
                    let states: Vec<StepState> = parents.iter().map(|p| p.state).collect();
                    seen.lock().unwrap().push((job.item, input, states));
                    graph
                        .record_result(job.id, job.item.as_bytes())
                        .await
                        .map_err(JobError::permanent)?;
                    Ok(())
                }
            }
        });
        let spec = WorkflowSpec::new()
            .step("notify", "notify", &["upload"])
            .step("resize", "resize", &[])
            .step("upload", "upload", &["resize"]);
        let wf = q.store().push_workflow(spec).await.unwrap();
        q.wait_empty().await;
        pool.shutdown(Duration::from_secs(1)).await;
        let seen = seen.lock().unwrap().clone();
        let names: Vec<&str> = seen.iter().map(|s| s.0).collect();
        assert_eq!(names, ["resize", "upload", "notify"]);
        assert_eq!(
            seen[1].1.as_deref(),
            Some(&b"resize"[..]),
            "upload reads resize's result"
        );
        assert_eq!(seen[2].1.as_deref(), Some(&b"upload"[..]));
        for (name, _, parents) in &seen {
            assert!(
                parents.iter().all(|s| matches!(s, StepState::Acked(_))),
                "{name} ran before its parent's ack: {parents:?}"
            );
        }
        let steps = q.store().workflow_steps(wf).await.unwrap().unwrap();
        assert_eq!(steps.len(), 3);
        assert!(
            steps.iter().all(|s| matches!(s.state, StepState::Acked(_))),
            "{steps:?}"
        );
        assert_eq!(q.stats().acked, 3);
    });
}

/// 1,000 children into one `on complete` callback through a Pool, some children retried
/// before their ack and every tenth dead-lettered: the callback runs once, after every
/// child finished, reading each child's outcome; the counts are exact.
#[test]
fn a_fan_out_of_a_thousand_children_releases_one_callback_with_exact_counts() {
    const CALLBACK: u32 = u32::MAX;
    sim::run(|rt| async move {
        let config = config()
            .with_max_attempts(2)
            .with_backoff(leaseq_async::Backoff::None);
        let q: LeaseQueue<u32, SimRuntime> = sim::queue(&rt, config);
        let callbacks = Arc::new(Mutex::new(Vec::new()));
        let pool = Pool::builder(q.clone()).workers(4).spawn({
            let (q, callbacks) = (q.clone(), callbacks.clone());
            move |job| {
                let (q, callbacks) = (q.clone(), callbacks.clone());
                async move {
                    match job.item {
                        CALLBACK => {
                            let parents = q.store().parent_outcomes(job.id).await.unwrap().unwrap();
                            let acked = parents
                                .iter()
                                .filter(|p| matches!(p.state, StepState::Acked(_)))
                                .count();
                            let dead = parents
                                .iter()
                                .filter(|p| matches!(p.state, StepState::DeadLettered(_)))
                                .count();
                            let results = parents.iter().filter(|p| p.result.is_some()).count();
                            callbacks
                                .lock()
                                .unwrap()
                                .push((parents.len(), acked, dead, results));
                            Ok(())
                        }
                        n if n % 10 == 0 => Err(JobError::permanent("bad input")),
                        n if n % 7 == 0 && job.attempt == 1 => Err(JobError::retry("busy")),
                        n => {
                            q.store()
                                .record_result(job.id, &n.to_le_bytes())
                                .await
                                .map_err(JobError::permanent)?;
                            Ok(())
                        }
                    }
                }
            }
        });
        let batch = q
            .store()
            .push_batch((0..1000).collect(), CALLBACK, BatchOn::Complete)
            .await
            .unwrap();
        q.wait_empty().await;
        sleep(&rt, Duration::from_secs(1)).await;
        q.wait_empty().await;
        pool.shutdown(Duration::from_secs(1)).await;
        assert_eq!(
            *callbacks.lock().unwrap(),
            [(1000, 900, 100, 900)],
            "run once"
        );
        let counts = q.store().batch_counts(batch).await.unwrap().unwrap();
        let mut expected = BatchCounts::default();
        (expected.total, expected.acked, expected.dead_lettered) = (1000, 900, 100);
        assert_eq!(counts, expected);
        assert_eq!(q.stats().acked, 901, "900 children and the callback");
    });
}

/// A parent dead-lettered, under each policy of its dependent: `Cancel` cancels it, `Run`
/// releases it, `Hold` holds it until the parent is redriven and acked; each at once, in
/// the dead letter's own lock hold (no driver step in between).
#[test]
fn a_failed_parent_does_what_each_policy_says() {
    for policy in [
        OnFailedParent::Cancel,
        OnFailedParent::Run,
        OnFailedParent::Hold,
    ] {
        sim::run(|rt| async move {
            let q: LeaseQueue<&'static str, SimRuntime> = sim::queue(&rt, config());
            let parent = q.try_push("parent").unwrap();
            let child = q
                .store()
                .push_after("child", &[Parent::Message(parent)], policy)
                .await
                .unwrap();
            let d = q.receive().await.unwrap();
            d.dead_letter("broken").await.unwrap(); // told to the graph under its lock
            let state = q.store().job_state(child).await.unwrap().unwrap();
            match policy {
                OnFailedParent::Cancel => {
                    assert_eq!(state, StepState::Cancelled);
                    assert!(q.try_receive().is_none());
                }
                OnFailedParent::Run => {
                    assert!(matches!(state, StepState::Queued(_)), "{state:?}");
                    assert_eq!(*q.try_receive().unwrap().item(), "child");
                }
                _ => {
                    assert_eq!(state, StepState::Held);
                    assert!(q.try_receive().is_none());
                    q.store().redrive(parent).unwrap();
                    assert_eq!(
                        q.store().job_state(child).await.unwrap(),
                        Some(StepState::Pending)
                    );
                    let again = q.receive().await.unwrap();
                    assert_eq!(*again.item(), "parent");
                    again.ack().await.unwrap();
                    assert_eq!(*q.try_receive().unwrap().item(), "child");
                }
            }
        });
    }
}

/// Each step's state, in the spec's order.
async fn states(q: &LeaseQueue<&'static str, SimRuntime>, wf: WorkflowId) -> Vec<StepState> {
    let steps = q.store().workflow_steps(wf).await.unwrap().unwrap();
    steps.into_iter().map(|s| s.state).collect()
}

/// A workflow step dead-lettered cancels the step after it; a retry of the failed step
/// redrives it and revives the next, which runs once the retried step is acked.

#[test]
fn a_retried_step_brings_back_what_its_failure_cancelled() {
    sim::run(|rt| async move {
        let q: LeaseQueue<&'static str, SimRuntime> = sim::queue(&rt, config());
        let spec = WorkflowSpec::new()
            .step("a", "a", &[])
            .step("b", "b", &["a"]);
        let wf = q.store().push_workflow(spec).await.unwrap();
        dead_letter_next(&rt, &q).await;
        assert!(matches!(
            states(&q, wf).await[..],
            [StepState::DeadLettered(_), StepState::Cancelled]
        ));
        q.store().retry_step(wf, "a").await.unwrap();
        assert!(matches!(
            states(&q, wf).await[..],
            [StepState::Queued(_), StepState::Pending]
        ));
        let a = q.receive().await.unwrap();
        assert_eq!(*a.item(), "a");
        a.ack().await.unwrap();
        assert_eq!(*q.try_receive().unwrap().item(), "b");
        let err = q.store().retry_step(wf, "a").await.unwrap_err();
        assert!(matches!(err, DependencyError::Graph(_)), "{err:?}");
    });
}

/// A dependent is not receivable while its parent is in the queue: not after a nack, not
/// after a lease that ran out, not while the parent is held; it is after the ack, which
/// wakes a receiver already waiting.
#[test]
fn a_dependent_is_never_receivable_before_its_parents_ack() {
    sim::run(|rt| async move {
        let config = config().with_backoff(leaseq_async::Backoff::None);
        let q: LeaseQueue<u32, SimRuntime> = sim::queue(&rt, config);
        let parent = q.try_push(1).unwrap();
        q.store()
            .push_after(2, &[parent.into()], OnFailedParent::Cancel)
            .await
            .unwrap();
        let d = q.receive().await.unwrap();
        assert!(
            q.try_receive().is_none(),
            "child hidden while the parent runs"
        );
        d.nack("again").await.unwrap();
        let d = q.receive().await.unwrap();
        assert_eq!(*d.item(), 1);
        sleep(&rt, Duration::from_secs(11)).await; // its lease runs out
        assert!(q
            .store()
            .job_state(q.store().job_of(parent).await.unwrap().unwrap())
            .await
            .unwrap()
            .is_some());
        let d = q.receive().await.unwrap();
        assert_eq!(*d.item(), 1, "the child is still not receivable");
        let got = Arc::new(Mutex::new(None));
        let _waiting = rt.spawn(Box::pin({
            let (q, got) = (q.clone(), got.clone());
            async move {
                let d = q.receive().await.unwrap();
                *got.lock().unwrap() = Some(*d.item());
            }
        }));
        sleep(&rt, Duration::from_millis(1)).await;
        assert_eq!(*got.lock().unwrap(), None);
        d.ack().await.unwrap();
        sleep(&rt, Duration::from_millis(1)).await;
        assert_eq!(
            *got.lock().unwrap(),
            Some(2),
            "the ack woke the waiting receiver"
        );
    });
}

/// A bounded queue refuses dependencies, the item handed back; a parent never pushed is
/// refused too.
#[test]
fn refused_pushes_hand_the_item_back() {
    sim::run(|rt| async move {
        let q: LeaseQueue<u8, SimRuntime> = sim::queue(&rt, config().with_capacity(4));
        let refused = q
            .store()
            .push_after(7, &[], OnFailedParent::Cancel)
            .await
            .unwrap_err();
        assert_eq!(
            (refused.error, refused.payload),
            (DependencyError::Bounded, 7)
        );
        let q: LeaseQueue<u8, SimRuntime> = sim::queue(&rt, config());
        let never = q.try_push(1).unwrap().get() + 5;
        let never = leaseq_async::MessageId::new(never);
        let refused = q
            .store()
            .push_after(8, &[Parent::Message(never)], OnFailedParent::Cancel)
            .await
            .unwrap_err();
        assert_eq!(refused.error, DependencyError::UnknownMessage(never));
        assert_eq!(refused.payload, 8);
    });
}

/// An operator's redrive of every dead letter and a purge reach the graph: a dependent
/// cancelled by its dead-lettered parent waits again once the parent is redriven and runs
/// after its ack; a purged parent cancels its dependent.
#[test]
fn redrive_all_and_purge_reach_the_graph() {
    sim::run(|rt| async move {
        let q: LeaseQueue<u32, SimRuntime> = sim::queue(&rt, config());
        let graph = q.store();
        let parent = q.try_push(1).unwrap();
        let child = graph
            .push_after(2, &[parent.into()], OnFailedParent::Cancel)
            .await
            .unwrap();
        dead_letter_next(&rt, &q).await;
        assert_eq!(
            graph.job_state(child).await.unwrap(),
            Some(StepState::Cancelled)
        );
        assert_eq!(graph.redrive_all(), [parent]);
        assert_eq!(
            graph.job_state(child).await.unwrap(),
            Some(StepState::Pending)
        );
        let d = q.receive().await.unwrap();
        assert_eq!(*d.item(), 1);
        d.ack().await.unwrap();
        let d = q.try_receive().unwrap();
        assert_eq!(*d.item(), 2);
        d.ack().await.unwrap();

        let parent = q.try_push(3).unwrap();
        let child = graph
            .push_after(4, &[parent.into()], OnFailedParent::Cancel)
            .await
            .unwrap();
        assert_eq!(graph.purge(), [parent]);
        assert_eq!(
            graph.job_state(child).await.unwrap(),
            Some(StepState::Cancelled)
        );
        assert!(q.try_receive().is_none());
    });
}

/// A finished workflow and a finished batch can be forgotten; an unfinished one is
/// refused and stays readable.
#[test]
fn finished_workflows_and_batches_are_forgotten() {
    sim::run(|rt| async move {
        let q: LeaseQueue<u32, SimRuntime> = sim::queue(&rt, config());
        let graph = q.store();
        let wf = graph
            .push_workflow(WorkflowSpec::new().step("a", 1, &[]).step("b", 2, &["a"]))
            .await
            .unwrap();
        let batch = graph
            .push_batch(vec![3], 4, BatchOn::Success)
            .await
            .unwrap();
        assert!(matches!(
            graph.forget_workflow(wf).await,
            Err(DependencyError::Graph(_))
        ));
        assert!(matches!(
            graph.forget_batch(batch).await,
            Err(DependencyError::Graph(_))
        ));
        assert!(graph.workflow_steps(wf).await.unwrap().is_some());
        while let Some(d) = q.try_receive() {
            d.ack().await.unwrap();
        }
        graph.forget_workflow(wf).await.unwrap();
        graph.forget_batch(batch).await.unwrap();
        assert!(graph.workflow_steps(wf).await.unwrap().is_none());
        assert!(graph.batch_counts(batch).await.unwrap().is_none());
        assert_eq!(q.stats().acked, 4);
    });
}
