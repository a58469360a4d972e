//! The finished jobs page over HTTP: on Postgres (a queue kept with a retention window) its
//! rows are the record the inspector reads, filtered by outcome and job kind, a page at a
//! time through the pager's links; a SQLite file whose queue kept no record shows the tab
//! with no entry. Postgres skips loudly without a server; fails then with
//! `LEASEQ_PG_REQUIRED=1`.

mod common;

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use common::*;
use leaseq_async::{Config, HistoryQuery};
use leaseq_postgres::PgInspector;
use leaseq_sqlite::FileView;
use leaseq_web::{PgOperator, SqliteOperator};

/// The `data-outcome` of each row of the page's table.
fn outcomes(html: &str) -> Vec<String> {
    html.match_indices("<tr data-outcome=\"")
        .map(|(at, key)| {
            let rest = &html[at + key.len()..];
            rest[..rest.find('"').unwrap()].to_string()
        })
        .collect()
}

/// The next page's link, if the pager has one (`&amp;` as the page holds it, unescaped).
fn next(html: &str) -> Option<String> {
    let key = "<a rel=\"next\" href=\"";
    let at = html.find(key)? + key.len();
    Some(html[at..at + html[at..].find('"')?].replace("&amp;", "&"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_finished_jobs_filtered_and_paged() {
    let Some(url) = pg_server().await else {
        return;
    };
    let schema = pg_schema("finished");
    let q: leaseq_postgres::PgQueue<Vec<u8>> =
        leaseq_tokio::LeaseQueue::builder(Config::new(Duration::from_secs(30)))
            .name("web_hist")
            .codec(leaseq_postgres::BytesCodec)
            .open(
                leaseq_postgres::Postgres::url(&url).options(
                    leaseq_postgres::Options::new()
                        .schema(&schema)
                        .pool_size(2)
                        .retention(Duration::from_secs(3600)),
                ),
            )
            .await
            .unwrap();
    for kind in ["email", "email", "sms", "email", "sms"] {
        q.push(envelope(kind, "{}")).await.unwrap();
        let d = q.receive_timeout(Duration::from_secs(15)).await.unwrap();
        if kind == "sms" {
            d.dead_letter("no such number <b>").await.unwrap();
        } else {
            d.ack().await.unwrap();
        }
    }
    q.close().await.unwrap();
    let mut inspector = PgInspector::connect(&url, &schema).await.unwrap();
    // The record is written with the acks' batch: waited for (not a measured time).
    let until = Instant::now() + Duration::from_secs(30);
    let every = loop {
        let got = inspector
            .history("web_hist", &HistoryQuery::first(100))
            .await
            .unwrap();
        if got.len() == 5 {
            break got;
        }
        assert!(Instant::now() < until, "recorded: {got:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let app = leaseq_web::router(PgOperator::new(
        PgInspector::connect(&url, &schema).await.unwrap(),
    ));

    let (_, _, live) = get(&app, "/queues/web_hist", &[]).await;
    assert!(
        live.contains("href=\"/queues/web_hist/finished\""),
        "{live}"
    );
    let (status, _, page) = get(&app, "/queues/web_hist/finished", &[]).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let want: Vec<String> = every.iter().map(|f| f.outcome.to_string()).collect();
    assert_eq!(outcomes(&page), want);
    assert_eq!(want, ["acked", "acked", "dead", "acked", "dead"]);
    // The error shows as text.
    assert!(page.contains("no such number &lt;b&gt;"), "{page}");
    assert!(!page.contains("<b>"), "{page}");

    let (_, _, dead) = get(&app, "/queues/web_hist/finished?outcome=dead", &[]).await;
    assert_eq!(outcomes(&dead), ["dead", "dead"]);
    let (_, _, email) = get(&app, "/queues/web_hist/finished?kind=email", &[]).await;
    assert_eq!(outcomes(&email), ["acked", "acked", "acked"]);
    let (_, _, none) = get(
        &app,
        "/queues/web_hist/finished?kind=email&outcome=dead",
        &[],
    )
    .await;
    assert!(outcomes(&none).is_empty() && none.contains("id=\"empty\""));
    let (status, _, _) = get(&app, "/queues/web_hist/finished?outcome=done", &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // Pages of two, through the pager's links, the filter kept: the whole record once.
    let mut link = "/queues/web_hist/finished?limit=2&kind=email".to_string();
    let mut seen = Vec::new();
    for _ in 0..5 {
        let (status, _, page) = get(&app, &link, &[]).await;
        assert_eq!(status, StatusCode::OK);
        seen.extend(outcomes(&page));
        match next(&page) {
            Some(n) => {
                assert!(n.contains("kind=email"), "{n}");
                link = n;
            }
            None => break,
        }
    }
    assert_eq!(seen, ["acked", "acked", "acked"]);
    pg_drop(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_file_without_a_record_has_an_empty_finished_page() {
    // The fixture's queue was opened without a retention window: nothing recorded.
    let path = sqlite_fixture("finished").await;
    let app = leaseq_web::router(SqliteOperator::new(FileView::open(&path).unwrap()));
    let (_, _, page) = get(&app, "/queues/billing", &[]).await;
    assert!(page.contains("href=\"/queues/billing/finished\""), "{page}");
    let (status, _, page) = get(&app, "/queues/billing/finished", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        outcomes(&page).is_empty() && page.contains("id=\"empty\""),
        "{page}"
    );
    remove(&path);
}
