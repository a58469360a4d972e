//! The workers page over HTTP, mounted beside a real pool (a SQLite queue, tokio, real time;
//! every wait polls the page with a generous bound, nothing is timed): the items the
//! workers hold, the watchdog's stuck reports, the pool's outcomes and the advisor's
//! suggested timeout as the pool's own handle reads them; without a pool, the page says it
//! needs one.

mod common;

use std::time::{Duration, Instant};

use common::*;
use leaseq_async::{Config, Job, Watchdog};
use leaseq_sqlite::FileView;
use leaseq_web::{Dashboard, SqliteOperator};

/// How long a wait for the pool may take before the test fails (not a measured time).
const PATIENCE: Duration = Duration::from_secs(60);

/// Numbers of the attribute `key="..."` in `html`, in order.
fn values(html: &str, key: &str) -> Vec<String> {
    let key = format!("{key}=\"");
    html.match_indices(&key)
        .map(|(at, _)| {
            let rest = &html[at + key.len()..];
            rest[..rest.find('"').unwrap()].to_string()
        })
        .collect()
}

/// The card `key`'s text.
fn card(html: &str, key: &str) -> String {
    let k = format!("data-k=\"{key}\">");
    let at = html
        .find(&k)
        .unwrap_or_else(|| panic!("no card {key}: {html}"))
        + k.len();
    html[at..at + html[at..].find('<').unwrap()].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workers_page_shows_what_the_pool_holds_and_the_watchdog_said() {
    let path = temp("workers");
    let q = leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(Config::new(Duration::from_secs(60)))
        .name("mail")
        .codec(leaseq_sqlite::BytesCodec)
        .open(leaseq_sqlite::Sqlite::file(&path))
        .await
        .unwrap();
    // Items saying "hold" wait for the gate: the workers hold them until the test opens it.
    let (gate, gated) = tokio::sync::watch::channel(false);
    let pool = leaseq_tokio::Pool::builder(q.clone())
        .workers(2)
        .watchdog(Watchdog::new(
            Duration::from_millis(10),
            Duration::from_millis(50),
        ))
        .spawn(move |job: Job<Vec<u8>>| {
            let mut gated = gated.clone();
            async move {
                if job.item == b"hold" {
                    let _ = gated.wait_for(|open| *open).await;
                }
                Ok(())
            }
        });
    for _ in 0..3 {
        q.push(b"quick".to_vec()).await.unwrap();
    }
    let held = [
        q.push(b"hold".to_vec()).await.unwrap(),
        q.push(b"hold".to_vec()).await.unwrap(),
    ];
    let app = Dashboard::new(SqliteOperator::new(FileView::open(&path).unwrap()))
        .with_pool("mailer <b>", &pool)
        .router();

    // Both workers on a held item, each reported stuck by the watchdog.
    let until = Instant::now() + PATIENCE;
    let page = loop {
        let (status, _, page) = get(&app, "/workers", &[]).await;
        assert_eq!(status, axum::http::StatusCode::OK, "{page}");
        if values(&page, "data-stuck") == ["true", "true"] {
            break page;
        }
        assert!(Instant::now() < until, "{page}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mut items = values(&page, "data-item");
    items.sort();
    let want: Vec<String> = held.iter().map(|id| id.get().to_string()).collect();
    assert_eq!(items, want);
    assert_eq!(values(&page, "data-worker").len(), 2);
    assert_eq!(card(&page, "busy"), "2");
    assert_eq!(card(&page, "live"), "2 of 2");
    assert_eq!(card(&page, "stuck"), "2");
    assert_eq!(card(&page, "ok"), pool.stats().ok.to_string());
    assert_eq!(pool.stats().ok, 3);
    assert!(page.contains("Watchdog reports"), "{page}");
    // The pool's name shows as text; its items link to the store's item pages.
    assert!(
        page.contains("mailer &lt;b&gt;") && !page.contains("mailer <b>"),
        "{page}"
    );
    assert!(
        page.contains(&format!("href=\"/queues/mail/items/{}\"", held[0].get())),
        "{page}"
    );

    // The gate opens: every worker idle, five done, a timeout suggested from their runs.
    gate.send_replace(true);
    let page = loop {
        let (_, _, page) = get(&app, "/workers", &[]).await;
        if page.contains("Every worker is idle") && card(&page, "ok") == "5" {
            break page;
        }
        assert!(Instant::now() < until, "{page}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(card(&page, "busy"), "0");
    assert_eq!(card(&page, "stuck"), "0");
    let suggested = values(&page, "data-suggested-ms");
    assert_eq!(suggested.len(), pool.stats().types.len(), "{page}");
    let advisor = pool.stats().types[0].1.suggested_timeout.unwrap();
    assert_eq!(suggested[0], advisor.as_millis().to_string());

    pool.shutdown(Duration::from_secs(5)).await;
    q.close().await.unwrap();
    remove(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_pool_the_workers_page_says_it_needs_one() {
    let path = sqlite_fixture("workers-none").await;
    let app = leaseq_web::router(SqliteOperator::new(FileView::open(&path).unwrap()));
    let (status, _, page) = get(&app, "/workers", &[]).await;
    assert_eq!(status, axum::http::StatusCode::OK);
    assert!(page.contains("id=\"not-mounted\""), "{page}");
    assert!(!page.contains("data-pool="), "{page}");
    // Every page links to it.
    let (_, _, overview) = get(&app, "/", &[]).await;
    assert!(overview.contains("href=\"/workers\""), "{overview}");
    remove(&path);
}
