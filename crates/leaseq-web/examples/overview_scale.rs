//! How long the overview takes on Postgres with 100 queues holding 1,000,000 items (the
//! goal of issue 31: <= 200 ms), beside the same counts read from the partial indexes
//! alone (index-only scans) and the oldest ready item's age of every queue (index probes),
//! in the same run.
//!
//! `cargo run -p leaseq-web --example overview_scale [-- ROWS]`; the server from
//! `LEASEQ_PG_URL` (default: this machine's). The schema `leaseq_web_overview_scale` is
//! made afresh and dropped at the end.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use tower::ServiceExt;

const SCHEMA: &str = "leaseq_web_overview_scale";
const QUEUES: u64 = 100;
const RUNS: usize = 7;

/// The median of `runs` timings of `f`.
async fn median<F, Fut>(mut f: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        f().await;
        times.push(t.elapsed());
    }
    times.sort();
    times[RUNS / 2]
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

    let inspector = leaseq_postgres::PgInspector::connect(&url, SCHEMA)
        .await
        .unwrap();
    let app = leaseq_web::router(leaseq_web::PgOperator::new(inspector));
    let load = || {
        let app = app.clone();
        async move {
            let r = app
                .oneshot(Request::builder().uri("/").body(Body::empty()).unwrap())
                .await
                .unwrap();
            assert!(r.status().is_success());
            let _ = http_body_util::BodyExt::collect(r.into_body())
                .await
                .unwrap();
        }
    };
    // The first load also reads each queue's record of finished jobs for the charts; the
    // later ones serve what it read (and refresh it in the background).
    let t = Instant::now();
    load().await;
    println!("overview page, first load: {:?}", t.elapsed());
    let overview = median(load).await;
    println!("overview page (PgInspector::queues, one pass over the table): median {overview:?} of {RUNS}");

    let mut ages_reader = leaseq_postgres::PgInspector::connect(&url, SCHEMA)
        .await
        .unwrap();
    let names: Vec<String> = (0..QUEUES).map(|n| format!("q{n:03}")).collect();
    let mut probes = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let ages = ages_reader.oldest_ready_ages(&names).await.unwrap();
        probes.push(t.elapsed());
        assert_eq!(ages.len() as u64, QUEUES);
    }
    probes.sort();
    println!(
        "oldest ready age of every queue (PgInspector::oldest_ready_ages, index probes): median {:?} of {RUNS}",
        probes[RUNS / 2]
    );

    let s = SCHEMA;
    let index_only = format!(
        "SELECT coalesce(w.queue, l.queue, d.queue), coalesce(w.ready, 0), coalesce(w.delayed, 0),
                coalesce(l.n, 0), coalesce(d.n, 0)
         FROM (SELECT queue, count(*) FILTER (WHERE visible_at <= clock_timestamp()) AS ready,
                      count(*) FILTER (WHERE visible_at > clock_timestamp()) AS delayed
               FROM {s}.items WHERE state = 0 GROUP BY queue) w
         FULL JOIN (SELECT queue, count(*) AS n FROM {s}.items WHERE state = 1 GROUP BY queue) l
           ON l.queue = w.queue
         FULL JOIN (SELECT queue, count(*) AS n FROM {s}.items WHERE state = 2 GROUP BY queue) d
           ON d.queue = coalesce(w.queue, l.queue)
         ORDER BY 1"
    );
    let plan = client
        .query(&format!("EXPLAIN {index_only}"), &[])
        .await
        .unwrap();
    for r in plan {
        let line: String = r.get(0);
        if line.contains("Scan") {
            println!("  plan: {}", line.trim());
        }
    }
    let by_index = median(|| {
        let client = &client;
        let sql = &index_only;
        async move {
            let rows = client.query(sql.as_str(), &[]).await.unwrap();
            assert_eq!(rows.len() as u64, QUEUES);
        }
    })
    .await;
    println!("the same counts from the partial indexes (index-only scans): median {by_index:?} of {RUNS}");
    // The planner kept to a heap scan for the waiting rows (most of them): forced onto the
    // claim index, for comparison.
    client
        .batch_execute("SET enable_seqscan = off")
        .await
        .unwrap();
    let forced = median(|| {
        let client = &client;
        let sql = &index_only;
        async move {
            client.query(sql.as_str(), &[]).await.unwrap();
        }
    })
    .await;
    client.batch_execute("RESET enable_seqscan").await.unwrap();
    println!("the same, every part forced onto its index (enable_seqscan off): median {forced:?} of {RUNS}");
    client
        .batch_execute(&format!("DROP SCHEMA {SCHEMA} CASCADE"))
        .await
        .unwrap();
}
