//! Workflows and batches through `LocalOperator` (issue 33: operators see each step's
//! state, attempts and error): a memory queue added with its graph shows a workflow's steps
//! in the spec's order with what each waits for, the queue's state of a queued step
//! (running), a dead-lettered step's attempts and error, a result's size; a batch's exact
//! counts and its held callback; cancel and retry act through the operator; a queue added
//! without its graph lists none and refuses the actions. Virtual time.

use std::time::Duration;

use leaseq_async::dependencies::{BatchOn, DependencyStore, WorkflowId, WorkflowSpec};
use leaseq_async::operator::{LocalOperator, Operator, OperatorError, StepStatus, WorkflowView};
use leaseq_async::{Config, Failure, LeaseQueue, SimRuntime};
use leaseq_test_kit::sim;

type Queue = LeaseQueue<Vec<u8>, SimRuntime>;

fn queue(rt: &SimRuntime, name: &'static str) -> Queue {
    LeaseQueue::builder(Config::new(Duration::from_secs(30)).with_max_attempts(1))
        .name(name)
        .runtime(rt.clone())
        .build()
        .unwrap()
}

/// Each step's name and status, in order.
fn statuses(w: &WorkflowView) -> Vec<(&str, &str)> {
    w.steps
        .iter()
        .map(|s| (s.name.as_str(), s.status.as_str()))
        .collect()
}

/// Receives the item `want` (the next one) and returns its delivery.
async fn next(q: &Queue, want: &str) -> leaseq_async::Delivery<Vec<u8>, SimRuntime> {
    let d = q.receive().await.unwrap();
    assert_eq!(d.item(), want.as_bytes());
    d
}

#[test]
fn a_workflow_shows_each_steps_state_attempts_error_and_result_and_is_acted_on() {
    sim::run(|rt| async move {
        let media = queue(&rt, "media");
        let plain = queue(&rt, "plain");
        let op = LocalOperator::new()
            .with_graph(media.clone())
            .with(plain.clone());
        assert!(op.capabilities().workflows);
        let spec = WorkflowSpec::new()
            .step("resize", b"resize".to_vec(), &[])
            .step("upload", b"upload".to_vec(), &["resize"])
            .step("thumbs", b"thumbs".to_vec(), &["resize"])
            .step("notify", b"notify".to_vec(), &["upload", "thumbs"]);
        let wf = media.store().push_workflow(spec).await.unwrap();

        let resize = next(&media, "resize").await;
        let result = b"s3://bucket/small.jpg";
        media
            .store()
            .record_result(resize.id(), result)
            .await
            .unwrap();
        resize.ack().await.unwrap();
        let upload = next(&media, "upload").await;
        upload
            .nack_with(Failure::error("s3: 503 slow down"))
            .await
            .unwrap();
        let thumbs = next(&media, "thumbs").await; // leased: running

        let w = op.workflow("media", wf).await.unwrap().expect("listed");
        assert_eq!(
            statuses(&w),
            [
                ("resize", "done"),
                ("upload", "dead-lettered"),
                ("thumbs", "running"),
                ("notify", "cancelled"),
            ]
        );
        assert_eq!(w.status(), "failed");
        let step = |name: &str| w.steps.iter().find(|s| s.name == name).unwrap();
        assert_eq!(step("notify").after, ["upload", "thumbs"]);
        assert!(step("resize").after.is_empty());
        assert_eq!(step("resize").result_size, Some(result.len() as u64));
        assert_eq!(step("upload").attempts, Some(1));
        assert_eq!(
            step("upload").last_error.as_deref(),
            Some("s3: 503 slow down")
        );
        assert_eq!(step("thumbs").attempts, Some(1));
        assert_eq!(step("thumbs").message, Some(thumbs.id()));
        assert_eq!(step("notify").attempts, None, "never pushed");
        let listed = op.workflows("media", None, 10).await.unwrap();
        assert_eq!(listed, std::slice::from_ref(&w));
        assert!(op
            .workflows("media", Some(wf), 10)
            .await
            .unwrap()
            .is_empty());
        let unknown = WorkflowId::new(wf.get() + 1);
        assert_eq!(op.workflow("media", unknown).await.unwrap(), None);

        // Retry the dead-lettered step: it is ready again, notify waits again.
        op.retry_step("media", wf, "upload").await.unwrap();
        let w = op.workflow("media", wf).await.unwrap().unwrap();
        assert_eq!(
            statuses(&w)[1..],
            [
                ("upload", "ready"),
                ("thumbs", "running"),
                ("notify", "waiting")
            ]
        );
        assert_eq!(w.status(), "running");
        assert!(matches!(
            op.retry_step("media", wf, "resize").await,
            Err(OperatorError::Refused(_))
        ));

        // Cancel what is left: the ready upload and the waiting notify, the running
        // thumbs under its lease.
        let n = op.cancel_workflow("media", wf).await.unwrap();
        assert!(n >= 2, "{n}");
        let w = op.workflow("media", wf).await.unwrap().unwrap();
        assert_eq!(statuses(&w)[3], ("notify", "cancelled"));
        assert_eq!(statuses(&w)[1], ("upload", "cancelled"));
        drop(thumbs);

        // A queue added without its graph: nothing listed, actions refused.
        assert!(op.workflows("plain", None, 10).await.unwrap().is_empty());
        assert!(op.batches("plain", None, 10).await.unwrap().is_empty());
        assert!(matches!(
            op.cancel_workflow("plain", wf).await,
            Err(OperatorError::Refused(_))
        ));
        assert_eq!(
            op.workflows("nope", None, 1).await,
            Err(OperatorError::NoSuchQueue("nope".into()))
        );
    });
}

#[test]
fn a_batch_shows_its_exact_counts_and_its_callback() {
    sim::run(|rt| async move {
        let mail = queue(&rt, "mail");
        let op = LocalOperator::new().with_graph(mail.clone());
        let children = vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()];
        let batch = mail
            .store()
            .push_batch(children, b"report".to_vec(), BatchOn::Success)
            .await
            .unwrap();
        next(&mail, "a").await.ack().await.unwrap();
        let b = op.batch("mail", batch).await.unwrap().expect("listed");
        assert_eq!(b.callback.status, StepStatus::Waiting);
        next(&mail, "b").await.dead_letter("bounced").await.unwrap();
        let b = op.batch("mail", batch).await.unwrap().expect("listed");
        assert_eq!((b.counts.total, b.counts.open, b.counts.acked), (3, 1, 1));
        assert_eq!(b.counts.dead_lettered, 1);
        assert_eq!(b.callback.status, StepStatus::Held, "a child failed");
        assert_eq!(b.on_str(), "on success");
        next(&mail, "c").await.ack().await.unwrap();
        let b = op.batch("mail", batch).await.unwrap().unwrap();
        assert_eq!((b.counts.open, b.counts.acked), (0, 2));
        assert_eq!(b.callback.status, StepStatus::Held, "still held");
        assert_eq!(op.batches("mail", None, 10).await.unwrap(), [b]);
    });
}
