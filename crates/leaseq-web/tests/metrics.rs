//! `/metrics` over HTTP: the Prometheus text format's content type, one HELP and TYPE per
//! family, and every queue's items by state and pause flag equal to what the store reads, the
//! age of the oldest ready item where the store gives it (Postgres), not on SQLite
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
    // Not without reading every ready row: left out, here and on the overview.
    assert!(!text.contains("oldest"), "{text}");
    let (_, _, overview) = get(&app, "/", &[]).await;
    assert!(!overview.contains("Oldest ready"), "{overview}");
    check(&text, &counts);
    remove(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_metrics_equal_the_schemas_counts_paused_included() {
    let Some((url, schema)) = pg_fixture_schema("metrics").await else {
        return;
    };
    let op = pg_acting(&url, &schema).await;
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
    // The oldest ready item's age: every fixture queue has ready items, pushed just now.
    assert_eq!(
        text.matches("# TYPE leaseq_oldest_ready_age_seconds gauge\n")
            .count(),
        1
    );
    for c in &queues {
        let series = format!("leaseq_oldest_ready_age_seconds{{queue=\"{}\"}} ", c.queue);
        let age: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix(&series))
            .unwrap_or_else(|| panic!("{series} in {text}"))
            .parse()
            .unwrap();
        assert!(age > 0.0 && age < 3600.0, "{series}{age}");
    }
    // Four samples a queue, its flag and its age: nothing else.
    let samples = text.lines().filter(|l| !l.starts_with('#')).count();
    assert_eq!(samples, queues.len() * 6);
    pg_drop(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_oldest_ready_age_over_every_priority_and_no_delayed_item() {
    let Some((url, schema)) = pg_fixture_schema("ages").await else {
        return;
    };
    // Rows written as a store would keep them, their times set by the database: in
    // `web_jobs` a ready item at priority 3 ready 100 s ago, one at priority 7 ready 10 s
    // ago, a delayed one at priority 0; `web_late` holds a delayed item only.
    let client = pg_client(&url).await;
    client
        .batch_execute(&format!(
            "DELETE FROM \"{schema}\".items WHERE queue = 'web_jobs' AND state = 0;
             INSERT INTO \"{schema}\".items (id, queue, state, priority, visible_at, payload) VALUES
               (1, 'web_jobs', 0, 3, now() - interval '100 seconds', '\\x00'),
               (2, 'web_jobs', 0, 7, now() - interval '10 seconds', '\\x00'),
               (3, 'web_jobs', 0, 0, now() + interval '1 hour', '\\x00'),
               (4, 'web_late', 0, 0, now() + interval '1 hour', '\\x00');"
        ))
        .await
        .unwrap();
    let app = leaseq_web::router(PgOperator::new(
        PgInspector::connect(&url, &schema).await.unwrap(),
    ));
    let (_, _, text) = get(&app, "/metrics", &[]).await;
    let age = |q: &str| -> f64 {
        let series = format!("leaseq_oldest_ready_age_seconds{{queue=\"{q}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&series))
            .unwrap_or_else(|| panic!("{series} in {text}"))
            .parse()
            .unwrap()
    };
    let jobs = age("web_jobs");
    assert!((100.0..3600.0).contains(&jobs), "{jobs}");
    assert_eq!(age("web_late"), 0.0, "a delayed item is not ready");
    assert_eq!(
        sample(&text, "leaseq_items{queue=\"web_jobs\",state=\"ready\"}"),
        Some(2)
    );
    // The overview shows the same ages.
    let (_, _, overview) = get(&app, "/", &[]).await;
    let row = |q: &str| {
        let at = overview.find(&format!("<tr data-queue=\"{q}\">")).unwrap();
        overview[at..at + overview[at..].find("</tr>").unwrap()].to_string()
    };
    assert!(
        overview.contains("<th class=\"n\">Oldest ready</th>"),
        "{overview}"
    );
    assert!(
        row("web_late").contains("data-oldest-ready=\"0\">-</td>"),
        "{overview}"
    );
    let jobs_row = row("web_jobs");
    let key = "data-oldest-ready=\"";
    let at = jobs_row.find(key).unwrap() + key.len();
    let shown: f64 = jobs_row[at..at + jobs_row[at..].find('"').unwrap()]
        .parse()
        .unwrap();
    assert!((100.0..3600.0).contains(&shown), "{jobs_row}");
    pg_drop(&url, &schema).await;
}
