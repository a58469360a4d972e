//! A job's trace context through the server: pushed inside a span by one store, handled by
//! a second store on the same queue (two processes' worth in one), and the handler's
//! `leaseq.job` span is the push span's child in the exported trace. The row's kind still
//! reads in SQL from the payload's first bytes.

use leaseq_test_kit::pg as common;

use std::time::Duration;

use common::*;
use leaseq_async::router::{Envelope, JobKind, Router};
use leaseq_async::{Config, Job};
use leaseq_test_kit::trace::{assert_job_is_child_of_push, export_spans};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Invoice {
    number: u32,
}
impl JobKind for Invoice {
    const KIND: &'static str = "invoice";
}

// The only test of this file (its own process): the subscriber is the global one, since
// the pool's workers run on the runtime's threads.
#[test]
fn the_handler_in_another_store_joins_the_trace_of_the_push() {
    let Some(url) = server() else { return };
    let exporter = export_spans();

    runtime().block_on(async {
        let name = unique("trace");
        let producer =
            common::open_envelopes(&url, &name, Config::new(Duration::from_secs(30))).await;
        let id = {
            let push = tracing::info_span!("push");
            let _entered = push.enter();
            let job = Envelope::new(&Invoice { number: 981 }).unwrap();
            assert!(job.traceparent().is_some());
            producer.push(job).await.unwrap()
        };
        let db = sql(&url).await;
        let row = db
            .query_one(
                &format!(
                    "SELECT substr(payload, 2, get_byte(payload, 0)) FROM {SCHEMA}.items
                     WHERE id = $1"
                ),
                &[&(id.get() as i64)],
            )
            .await
            .expect("read the row");
        assert_eq!(row.get::<_, Vec<u8>>(0), b"invoice");

        let consumer =
            common::open_envelopes(&url, &name, Config::new(Duration::from_secs(30))).await;
        let router = Router::new().route::<Invoice, _>(|job: Job<Invoice>| async move {
            assert_eq!(job.item.number, 981);
            Ok(())
        });
        let pool = leaseq_tokio::Pool::builder(consumer.clone())
            .workers(1)
            .spawn_router(router);
        tokio::time::timeout(PATIENCE, consumer.wait_empty())
            .await
            .expect("handled in time");
        let report = pool.shutdown(Duration::from_secs(5)).await;
        assert_eq!(report.stats.ok, 1);
    });

    assert_job_is_child_of_push(&exporter);
}
