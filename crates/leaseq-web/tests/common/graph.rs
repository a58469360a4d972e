//! The workflow fixture of the dashboard's workflow tests: a memory queue of this process
//! with its dependency graph, through a `LocalOperator`.

use std::time::Duration;

use leaseq_async::dependencies::{BatchId, BatchOn, DependencyStore, WorkflowId, WorkflowSpec};
use leaseq_async::{Config, Failure};
use leaseq_web::LocalOperator;

use super::envelope;

/// A memory queue of envelopes.
pub type Queue = leaseq_tokio::LeaseQueue<Vec<u8>>;

/// What the fixture made: the queue, the delivery holding the running step, the workflows
/// (failed, done, just started) and the batch.
pub struct Graph {
    pub queue: Queue,
    pub running: leaseq_tokio::Delivery<Vec<u8>>,
    pub failed: WorkflowId,
    pub done: WorkflowId,
    pub started: WorkflowId,
    pub batch: BatchId,
}

/// A job of kind `kind`.
fn job(kind: &str) -> Vec<u8> {
    envelope(kind, "{}")
}

/// The next item, which must be of kind `kind`.
async fn next(q: &Queue, kind: &str) -> leaseq_tokio::Delivery<Vec<u8>> {
    let d = q.try_receive().expect("an item ready");
    assert_eq!(d.item(), &job(kind));
    d
}

/// `media`, one attempt per item: workflow "failed" (resize done with a result, upload
/// dead-lettered "s3: 503 slow down", thumbs running, notify cancelled), "done" (a chain of
/// three steps, every one acked), "started" (its first step ready, the next waiting), and a
/// batch of five children into an `on complete` callback (three acked, one dead-lettered,
/// one ready).
pub async fn fixture() -> Graph {
    let queue = Queue::builder(Config::new(Duration::from_secs(300)).with_max_attempts(1))
        .name("media")
        .build()
        .unwrap();
    let q = &queue;
    let g = q.store();
    let spec = WorkflowSpec::new()
        .step("resize", job("resize"), &[])
        .step("upload", job("upload"), &["resize"])
        .step("thumbs", job("thumbs"), &["resize"])
        .step("notify", job("notify"), &["upload", "thumbs"]);
    let failed = g.push_workflow(spec).await.unwrap();
    let resize = next(q, "resize").await;
    g.record_result(resize.id(), b"s3://media/small.jpg")
        .await
        .unwrap();
    resize.ack().await.unwrap();
    let upload = next(q, "upload").await;
    upload
        .nack_with(Failure::error("s3: 503 slow down"))
        .await
        .unwrap();
    let running = next(q, "thumbs").await;

    let spec = WorkflowSpec::new()
        .step("fetch", job("fetch"), &[])
        .step("parse", job("parse"), &["fetch"])
        .step("store", job("store"), &["parse"]);
    let done = g.push_workflow(spec).await.unwrap();
    for kind in ["fetch", "parse", "store"] {
        next(q, kind).await.ack().await.unwrap();
    }

    let children = (0..5).map(|_| job("email")).collect();
    let batch = g
        .push_batch(children, job("report"), BatchOn::Complete)
        .await
        .unwrap();
    for _ in 0..3 {
        next(q, "email").await.ack().await.unwrap();
    }
    next(q, "email").await.dead_letter("bounced").await.unwrap();

    let spec = WorkflowSpec::new().step("export", job("export"), &[]).step(
        "mail",
        job("mail"),
        &["export"],
    );
    let started = g.push_workflow(spec).await.unwrap();
    Graph {
        queue,
        running,
        failed,
        done,
        started,
        batch,
    }
}

/// The operator over the fixture's queue with its graph.
pub fn operator(g: &Graph) -> LocalOperator {
    LocalOperator::new().with_graph(g.queue.clone())
}
