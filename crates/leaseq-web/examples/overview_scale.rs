//! How long the overview takes on Postgres with 100 queues holding 1,000,000 items (the
//! goal of issue 31: <= 200 ms): the page (`GET /` through `PgOperator`, whose counts come
//! from `PgInspector::queue_overview`: index probes, capped counts, a sample) beside the
//! reads the page made before it (`PgInspector::queues`, one `GROUP BY` over every row,
//! and the oldest ready item's age of every queue), alternating, in the same run; then how
//! far the page's estimates are from the exact counts.
//!
//! Two table states: freshly vacuumed (every page all-visible, so index-only scans read
//! no heap), then with a row in fifty updated and autovacuum off (no page all-visible: a
//! busy queue's worst case for an index-only scan).
//!
//! `cargo run -p leaseq-web --example overview_scale [-- ROWS [RUNS]]` (1,000,000 rows; 100
//! runs of each read per table state); the server from `LEASEQ_PG_URL` (default: this
//! machine's). The schema `leaseq_web_overview_scale` is made afresh and dropped at the end.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use leaseq_async::StoredCounts;
use leaseq_postgres::PgInspector;
use tower::ServiceExt;

const SCHEMA: &str = "leaseq_web_overview_scale";
const QUEUES: u64 = 100;
/// What `PgOperator` counts exactly (each state); estimated above.
const EXACT_UP_TO: u64 = 100;

/// The `q` quantile of sorted `times` (nearest rank).
fn quantile(times: &[Duration], q: f64) -> Duration {
    let rank = ((times.len() as f64 * q).ceil() as usize).clamp(1, times.len());
    times[rank - 1]
}

/// `times`' p50, p99 and max, in words.
fn summary(times: &mut [Duration]) -> String {
    times.sort();
    format!(
        "p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        quantile(times, 0.5).as_secs_f64() * 1e3,
        quantile(times, 0.99).as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3
    )
}

/// The overview page, its body checked to be a success.
async fn page(app: &axum::Router) {
    let r = app
        .clone()
        .oneshot(Request::builder().uri("/").body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = r.status();
    let body = http_body_util::BodyExt::collect(r.into_body())
        .await
        .unwrap()
        .to_bytes();
    assert!(
        status.is_success(),
        "{status}: {}",
        String::from_utf8_lossy(&body)
    );
}

/// The reads the overview made before `queue_overview`: every row grouped, then the ages.
async fn reads_before(inspector: &mut PgInspector) {
    let queues = inspector.queues().await.unwrap();
    let names: Vec<String> = queues.into_iter().map(|c| c.queue).collect();
    assert_eq!(names.len() as u64, QUEUES);
    inspector.oldest_ready_ages(&names).await.unwrap();
}

/// `runs` alternations of the page and the reads before it, on the table as it is.
async fn compare(app: &axum::Router, before: &mut PgInspector, runs: usize, state: &str) {
    // The first load also reads each queue's record of finished jobs for the charts; the
    // later ones serve what it read (and refresh it in the background): not timed.
    page(app).await;
    reads_before(before).await;
    let (mut after_t, mut before_t) = (Vec::new(), Vec::new());
    for i in 0..runs {
        for which in if i % 2 == 0 { [0, 1] } else { [1, 0] } {
            let t = Instant::now();
            if which == 0 {
                page(app).await;
                after_t.push(t.elapsed());
            } else {
                reads_before(before).await;
                before_t.push(t.elapsed());
            }
        }
    }
    println!("{state}:");
    println!(
        "  overview page (GET /, queue_overview): {}",
        summary(&mut after_t)
    );
    println!(
        "  before: queues (GROUP BY over every row) + oldest_ready_ages: {}",
        summary(&mut before_t)
    );
}

/// The relative errors of the estimated counts of `overview` against `exact`, added to
/// `errors`; panics if an exact one differs.
fn estimate_errors(overview: &[StoredCounts], exact: &[StoredCounts], errors: &mut Vec<f64>) {
    assert_eq!(overview.len(), exact.len());
    for (o, e) in overview.iter().zip(exact) {
        assert_eq!(o.queue, e.queue);
        for (got, want) in [
            (o.ready, e.ready),
            (o.delayed, e.delayed),
            (o.in_flight, e.in_flight),
            (o.dead, e.dead),
        ] {
            if o.is_estimate(got) {
                errors.push((got as f64 - want as f64).abs() / want.max(1) as f64);
            } else {
                assert_eq!(got, want, "an exact count differs: {o:?} {e:?}");
            }
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rows: u64 = std::env::args()
        .nth(1)
        .map_or(1_000_000, |s| s.parse().expect("ROWS is a number"));
    let url = std::env::var("LEASEQ_PG_URL")
        .unwrap_or_else(|_| "host=127.0.0.1 port=5432 user=postgres dbname=test".into());
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("a server");
    tokio::spawn(conn);
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"))
        .await
        .unwrap();
    // The schema, as a store makes it.
    let q: leaseq_postgres::PgQueue<Vec<u8>> =
        leaseq_tokio::LeaseQueue::builder(leaseq_async::Config::new(Duration::from_secs(30)))
            .name("q000")
            .codec(leaseq_postgres::BytesCodec)
            .open(
                leaseq_postgres::Postgres::url(&url)
                    .options(leaseq_postgres::Options::new().schema(SCHEMA).pool_size(2)),
            )
            .await
            .expect("open");
    q.close().await.unwrap();
    // 80 % ready, 10 % delayed an hour, 5 % leased, 5 % dead, spread over the queues.
    let t = Instant::now();
    client
        .batch_execute(&format!(
            "INSERT INTO {SCHEMA}.items (id, queue, state, visible_at, deadline, dead_at, payload)
             SELECT g, 'q' || lpad((g % {QUEUES})::text, 3, '0'),
                    CASE WHEN (g / 100) % 20 = 0 THEN 1 WHEN (g / 100) % 20 = 1 THEN 2 ELSE 0 END,
                    now() + CASE WHEN (g / 100) % 10 = 2 THEN interval '1 hour' ELSE interval '0' END,
                    CASE WHEN (g / 100) % 20 = 0 THEN now() + interval '1 hour' END,
                    CASE WHEN (g / 100) % 20 = 1 THEN now() END,
                    '\\x00'::bytea
             FROM generate_series(1, {rows}) g"
        ))
        .await
        .unwrap();
    client
        .batch_execute(&format!("VACUUM ANALYZE {SCHEMA}.items"))
        .await
        .unwrap();
    println!(
        "{rows} rows in {QUEUES} queues written in {:?}",
        t.elapsed()
    );

    let runs: usize = std::env::args()
        .nth(2)
        .map_or(100, |s| s.parse().expect("RUNS is a number"));
    let app = leaseq_web::router(leaseq_web::PgOperator::new(
        PgInspector::connect(&url, SCHEMA).await.unwrap(),
    ));
    let mut before = PgInspector::connect(&url, SCHEMA).await.unwrap();
    compare(&app, &mut before, runs, "table vacuumed").await;
    // A live table: every page changed since the last vacuum (a row in fifty updated), so
    // the visibility map holds no all-visible page and an index-only scan visits the heap.
    client
        .batch_execute(&format!(
            "ALTER TABLE {SCHEMA}.items SET (autovacuum_enabled = false);
             UPDATE {SCHEMA}.items SET attempts = attempts + 1 WHERE id % 50 = 0"
        ))
        .await
        .unwrap();
    compare(
        &app,
        &mut before,
        runs,
        "every page changed since the last vacuum",
    )
    .await;

    let mut errors = Vec::new();
    for _ in 0..10 {
        let overview = before.queue_overview(EXACT_UP_TO).await.unwrap();
        let exact = before.queues().await.unwrap();
        estimate_errors(&overview, &exact, &mut errors);
    }
    errors.sort_by(f64::total_cmp);
    if let (Some(median), Some(worst)) = (errors.get(errors.len() / 2), errors.last()) {
        println!(
            "estimates (counts over {EXACT_UP_TO}) against the exact counts, 10 reads: {} estimated, {:.1} % off at the median, {:.1} % at worst; every other count exact",
            errors.len(),
            median * 100.0,
            worst * 100.0
        );
    }
    client
        .batch_execute(&format!("DROP SCHEMA {SCHEMA} CASCADE"))
        .await
        .unwrap();
}
