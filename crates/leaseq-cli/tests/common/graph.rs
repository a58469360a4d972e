//! A workflow and a batch in a queue, for the CLI's workflow and batch commands on every
//! store: written once over any store with a dependency graph.

use std::time::Duration;

use leaseq_async::dependencies::{BatchId, BatchOn, DependencyStore, WorkflowId, WorkflowSpec};
use leaseq_async::{LeaseQueue, Runtime, Store};

/// In `q` (one attempt an item): workflow `resize -> upload -> notify` with `resize` acked
/// and `upload` dead-lettered ("s3 down"), so `notify` is cancelled by its parent; batch
/// `k0 k1 k2` (callback `report`, on complete) with `k0`, `k1` acked, `k2` dead-lettered
/// ("bounced"), its callback then received and acked. Each receive waits 15 s at most.
pub(crate) async fn graph_fixture<R, S>(q: &LeaseQueue<Vec<u8>, R, S>) -> (WorkflowId, BatchId)
where
    R: Runtime,
    S: Store<Vec<u8>, Runtime = R> + DependencyStore<Vec<u8>>,
{
    let g = q.store();
    let spec = WorkflowSpec::new()
        .step("resize", b"resize".to_vec(), &[])
        .step("upload", b"upload".to_vec(), &["resize"])
        .step("notify", b"notify".to_vec(), &["upload"]);
    let wf = g.push_workflow(spec).await.expect("push the workflow");
    let kids = vec![b"k0".to_vec(), b"k1".to_vec(), b"k2".to_vec()];
    let batch = g
        .push_batch(kids, b"report".to_vec(), BatchOn::Complete)
        .await
        .expect("push the batch");
    // resize, k0, k1, k2; then upload and report, released by those.
    for _ in 0..6 {
        let d = q
            .receive_timeout(Duration::from_secs(15))
            .await
            .expect("a delivery");
        match d.item().as_slice() {
            b"k2" => {
                d.dead_letter("bounced").await.expect("dead letter");
            }
            b"upload" => {
                d.dead_letter("s3 down").await.expect("dead letter");
            }
            b"resize" | b"k0" | b"k1" | b"report" => {
                d.ack().await.expect("ack");
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    (wf, batch)
}
