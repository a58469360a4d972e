//! Pause and resume from the dashboard in a real browser, on Postgres: a pool runs on its
//! own store instance (its own connections, another task of this process: the dashboard's
//! action opens a store of its own, so the pause reaches the pool only through the
//! database, as it would reach another process). The Pause button stops the pool's claims
//! (at most the leases a claim already running takes), read through the pool's queue; the
//! Resume button restarts them and every item is handled once. Screenshot of the paused
//! queue's page into docs/screenshots/. A second test reads a queue's finished jobs and
//! filters them by outcome (screenshot `finished`).
//!
//! Skips with a note without chromium/chromedriver (unless `LEASEQ_BROWSER_REQUIRED=1`) or
//! without a server (unless `LEASEQ_PG_REQUIRED=1`).

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::browser::*;
use common::*;
use fantoccini::Locator;
use leaseq_postgres::PgInspector;
use leaseq_test_kit::gated::{gated_pool, open_after_the_pause, until_ran, Gated};
use leaseq_web::PgOperator;

const WORKERS: u64 = 2;
/// The most leases one round of the pool's claims takes: one per worker and the pool's
/// prefetch (its default, 32).
const CLAIM_ROUND: u64 = WORKERS + 32;
const TOTAL: u64 = 200;
/// How long a wait for the pool may take before the test fails (not a measured time).
const PATIENCE: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pause_button_stops_a_running_pool_and_resume_restarts_it() {
    let Some((chromium, driver)) = browser() else {
        return;
    };
    let Some(url) = pg_server().await else {
        return;
    };
    let schema = pg_schema("browser_pause");
    let options = leaseq_postgres::Options::new().schema(&schema).pool_size(4);
    let q = pg_queue(&url, "web_pause", options).await;
    // After the first 10 items the handlers wait for this gate, so that the pool is still
    // running when the button is clicked, however long the browser takes.
    let Gated { pool, ran, gate } = gated_pool(&q, WORKERS as usize, 10);
    for n in 0..TOTAL {
        q.push(format!("item {n}").into_bytes()).await.unwrap();
    }
    until_ran(&ran, 10, PATIENCE).await;

    let addr = serve(PgOperator::with_actions(
        PgInspector::connect(&url, &schema).await.unwrap(),
        url.as_str(),
        schema.as_str(),
    ))
    .await;
    let (_driver, c) = session(&chromium, &driver).await;
    c.goto(&format!("http://{addr}/queues/web_pause"))
        .await
        .unwrap();
    assert_eq!(text(&c, "#status").await, "Running");
    click(&c, Locator::Css("form.action[action$=\"/pause\"] button")).await;
    assert!(text(&c, "#done").await.contains("is paused"));
    // Committed: from here on only the claims already running hand out leases.
    assert!(
        q.refresh_stats().await.unwrap().paused,
        "paused, as the pool's store reads it"
    );
    // Several of the claimer's poll intervals (200 ms).
    let (_, handled) = open_after_the_pause((&gate, &ran), &q, CLAIM_ROUND, PATIENCE).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(q.stats().delivered, handled, "nothing claimed while paused");
    assert!(
        handled < TOTAL,
        "the pause stopped the pool ({handled} handled)"
    );
    let s = q.refresh_stats().await.unwrap();
    assert_eq!(s.ready, TOTAL - handled, "{s:?}");

    // The page shows it paused, with the Resume button.
    c.goto(&format!("http://{addr}/queues/web_pause"))
        .await
        .unwrap();
    assert_eq!(text(&c, "#status").await, "Paused");
    assert_eq!(card(&c, "ready").await, (TOTAL - handled).to_string());
    no_script(&c).await;
    screenshot(&c, "queue-paused").await;
    click(&c, Locator::Css("form.action[action$=\"/resume\"] button")).await;
    assert!(text(&c, "#done").await.contains("is running again"));

    // Resumed: the pool handles the rest, each item once.
    let until = Instant::now() + PATIENCE;
    while (ran.lock().unwrap().len() as u64) < TOTAL {
        assert!(
            Instant::now() < until,
            "resumed: {} of {TOTAL} handled",
            ran.lock().unwrap().len()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    pool.shutdown(Duration::from_secs(5)).await;
    let ids = ran.lock().unwrap().clone();
    let unique: BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!((ids.len(), unique.len()), (TOTAL as usize, TOTAL as usize));
    assert!(!q.refresh_stats().await.unwrap().paused);
    q.close().await.unwrap();
    c.close().await.unwrap();
    pg_drop(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_reads_the_finished_jobs_filtered_by_outcome() {
    let Some((chromium, driver)) = browser() else {
        return;
    };
    let Some(url) = pg_server().await else {
        return;
    };
    let schema = pg_schema("browser_finished");
    let kept = Duration::from_secs(3600);
    let options = leaseq_postgres::Options::new()
        .schema(&schema)
        .pool_size(2)
        .retention(kept);
    let q = pg_queue(&url, "web_hist", options).await;
    let kinds = ["email", "report", "sms", "email", "sms"];
    finish_jobs(&q, &kinds, "no such number").await;
    q.close().await.unwrap();
    let mut inspector = PgInspector::connect(&url, &schema).await.unwrap();
    // The record is written with the acks' batch: waited for (not a measured time).
    let until = Instant::now() + PATIENCE;
    while inspector
        .history("web_hist", &leaseq_async::HistoryQuery::first(100))
        .await
        .unwrap()
        .len()
        < 5
    {
        assert!(Instant::now() < until, "recorded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let addr = serve(PgOperator::new(inspector)).await;
    let (_driver, c) = session(&chromium, &driver).await;
    c.goto(&format!("http://{addr}/queues/web_hist"))
        .await
        .unwrap();
    click(&c, Locator::LinkText("Finished jobs")).await;
    let rows = c
        .find_all(Locator::Css("table#finished tbody tr"))
        .await
        .unwrap();
    assert_eq!(rows.len(), 5);
    no_script(&c).await;
    screenshot(&c, "finished").await;
    // The outcome filter, chosen as a person would.
    click(
        &c,
        Locator::Css("select[name=\"outcome\"] option[value=\"dead\"]"),
    )
    .await;
    click(&c, Locator::Css("form.filter button")).await;
    let rows = c
        .find_all(Locator::Css(
            "table#finished tbody tr[data-outcome=\"dead\"]",
        ))
        .await
        .unwrap();
    let all = c
        .find_all(Locator::Css("table#finished tbody tr"))
        .await
        .unwrap();
    assert_eq!((rows.len(), all.len()), (2, 2));
    c.close().await.unwrap();
    pg_drop(&url, &schema).await;
}
