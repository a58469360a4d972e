//! `/metrics` over HTTP: the Prometheus text format's content type, one HELP and TYPE per
//! family, and every queue's items by state and pause flag equal to what the store reads
//! (the inspector / the file's view), on SQLite and Postgres (skipped loudly without a
//! server; failed then with `LEASEQ_PG_REQUIRED=1`).

mod common;

use axum::http::StatusCode;
use common::*;
use leaseq_async::StoredCounts;
use leaseq_postgres::PgInspector;
use leaseq_sqlite::FileView;
use leaseq_web::{PgOperator, SqliteOperator};

/// The value of the sample line that starts with `series ` in `text`.
fn sample(text: &str, series: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{series} ")))
        .map(|v| v.parse().unwrap())
}

/// `c`'s samples, as `text` holds them, equal its counts.
fn check(text: &str, c: &StoredCounts) {
    let q = c.queue.replace('\\', "\\\\").replace('"', "\\\"");
    for (state, n) in [
        ("ready", c.ready),
        ("delayed", c.delayed),
        ("in_flight", c.in_flight),
        ("dead", c.dead),
    ] {
        let series = format!("leaseq_items{{queue=\"{q}\",state=\"{state}\"}}");
        assert_eq!(sample(text, &series), Some(n), "{series} in {text}");
    }
    let series = format!("leaseq_paused{{queue=\"{q}\"}}");
    assert_eq!(sample(text, &series), Some(u64::from(c.paused)), "{text}");
}

fn format_ok(headers: &axum::http::HeaderMap, text: &str) {
    assert_eq!(
        headers["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    for family in ["leaseq_items", "leaseq_paused"] {
        assert_eq!(text.matches(&format!("# TYPE {family} gauge\n")).count(), 1);
        assert_eq!(text.matches(&format!("# HELP {family} ")).count(), 1);
    }
    assert!(
        !text.contains("oldest"),
        "no gauge the store cannot give cheaply"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_metrics_equal_the_files_counts() {
    let path = sqlite_fixture("metrics").await;
    let counts = FileView::open(&path).unwrap().counts().unwrap();
    let app = leaseq_web::router(SqliteOperator::new(FileView::open(&path).unwrap()));
    let (status, headers, text) = get(&app, "/metrics", &[]).await;
    assert_eq!(status, StatusCode::OK);
    format_ok(&headers, &text);
    assert_eq!((counts.ready, counts.delayed, counts.dead), (3, 1, 3));
    check(&text, &counts);
    remove(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_metrics_equal_the_schemas_counts_paused_included() {
    let Some(url) = pg_server().await else {
        return;
    };
    let schema = pg_schema("metrics");
    pg_fixture(&url, &schema).await;
    let op = PgOperator::with_actions(
        PgInspector::connect(&url, &schema).await.unwrap(),
        url.as_str(),
        schema.as_str(),
    );
    leaseq_web::Operator::set_paused(&op, "web_mail", true)
        .await
        .unwrap();
    let app = leaseq_web::router(op);
    let (status, headers, text) = get(&app, "/metrics", &[]).await;
    assert_eq!(status, StatusCode::OK);
    format_ok(&headers, &text);
    let queues = PgInspector::connect(&url, &schema)
        .await
        .unwrap()
        .queues()
        .await
        .unwrap();
    assert_eq!(queues.len(), 3);
    for c in &queues {
        check(&text, c);
    }
    assert_eq!(sample(&text, "leaseq_paused{queue=\"web_mail\"}"), Some(1));
    assert_eq!(sample(&text, "leaseq_paused{queue=\"web_jobs\"}"), Some(0));
    // Four samples a queue, one flag a queue: nothing else.
    let samples = text.lines().filter(|l| !l.starts_with('#')).count();
    assert_eq!(samples, queues.len() * 5);
    pg_drop(&url, &schema).await;
}
