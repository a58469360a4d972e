//! A job's trace context through a SQLite file: pushed inside a span by one store, the
//! file closed, handled by a second store on the file (as another process would), and the
//! handler's `leaseq.job` span is the push span's child in the exported trace.

use std::path::Path;
use std::time::Duration;

use leaseq_async::router::{Envelope, EnvelopeCodec, JobKind, Router};
use leaseq_async::{Config, Job, Pool};
use leaseq_smol::SmolRuntime;
use leaseq_sqlite::{Options, SqliteQueue};
use leaseq_test_kit::sqlite::{self, remove, temp};
use leaseq_test_kit::trace::{assert_job_is_child_of_push, export_spans};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Thumbnail {
    width: u32,
}
impl JobKind for Thumbnail {
    const KIND: &'static str = "thumbnail";
}

async fn open(path: &Path) -> SqliteQueue<Envelope, SmolRuntime, EnvelopeCodec> {
    let config = Config::new(Duration::from_secs(30));
    sqlite::open_async(path, config, EnvelopeCodec, Options::default())
        .await
        .unwrap()
}

// The only test of this file (its own process): the subscriber is the global one, since
// the pool's workers run on the executor's threads.
#[test]
fn the_handler_on_a_reopened_file_joins_the_trace_of_the_push() {
    let exporter = export_spans();

    let path = temp("trace-context");
    smol::block_on(async {
        // The producer: a store on the file, the push inside a span, then closed.
        let producer = open(&path).await;
        {
            let push = tracing::info_span!("push");
            let _entered = push.enter();
            let job = Envelope::new(&Thumbnail { width: 64 }).unwrap();
            assert!(job.traceparent().is_some());
            producer.push(job).await.unwrap();
        }
        producer.close().await.unwrap();
        drop(producer);

        // The consumer: a second store on the file after the first is gone.
        let consumer = open(&path).await;
        let router = Router::new().route::<Thumbnail, _>(|job: Job<Thumbnail>| async move {
            assert_eq!(job.item.width, 64);
            Ok(())
        });
        let pool = Pool::builder(consumer.clone())
            .workers(1)
            .spawn_router(router);
        consumer.wait_empty().await;
        let report = pool.shutdown(Duration::from_secs(5)).await;
        assert_eq!(report.stats.ok, 1);
        consumer.close().await.unwrap();
    });
    remove(&path);

    assert_job_is_child_of_push(&exporter);
}
