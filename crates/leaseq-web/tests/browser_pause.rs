//! Pause and resume from the dashboard in a real browser, on Postgres, across processes: a
//! pool runs in a second OS process (this test binary run again as the child test
//! `pause_child`, its own store and connections), so the pause reaches it only through the
//! database. The Pause button stops the pool's claims (at most the leases a claim already
//! running takes), read through the store from this process; the Resume button restarts
//! them and the child reports every item handled once. Screenshot of the paused queue's
//! page into docs/screenshots/. A second test reads a queue's finished jobs and filters them
//! by outcome (screenshot `finished`).
//!
//! Skips with a note without chromium/chromedriver (unless `LEASEQ_BROWSER_REQUIRED=1`) or
//! without a server (unless `LEASEQ_PG_REQUIRED=1`).

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::browser::*;
use common::*;
use fantoccini::Locator;
use leaseq_async::{Job, Stats};
use leaseq_postgres::PgInspector;
use leaseq_test_kit::child;
use leaseq_web::PgOperator;

const WORKERS: u64 = 2;
/// The most leases one round of the pool's claims takes: one per worker and the pool's
/// prefetch (its default, 32).
const CLAIM_ROUND: u64 = WORKERS + 32;
const TOTAL: u64 = 200;
/// Items the child's pool handles before its handlers wait for the gate file.
const BEFORE_GATE: usize = 10;
/// How long a wait for the pool may take before the test fails (not a measured time).
const PATIENCE: Duration = Duration::from_secs(60);
const QUEUE: &str = "web_pause";
const ENV: &str = "LEASEQ_WEB_PAUSE_";

async fn open(url: &str, schema: &str) -> leaseq_postgres::PgQueue<Vec<u8>> {
    let options = leaseq_postgres::Options::new().schema(schema).pool_size(4);
    pg_queue(url, QUEUE, options).await
}

/// The child process, killed if the test ends before it does.
struct Worker(Option<Child>);

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The queue's counts as the store holds them, once `done` says so (within [`PATIENCE`]).
async fn store_when(
    q: &leaseq_postgres::PgQueue<Vec<u8>>,
    what: &str,
    done: impl Fn(&Stats) -> bool,
) -> Stats {
    let until = Instant::now() + PATIENCE;
    loop {
        let s = q.refresh_stats().await.unwrap();
        if done(&s) {
            return s;
        }
        assert!(Instant::now() < until, "{what}: {s:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pause_button_stops_a_running_pool_and_resume_restarts_it() {
    let Some((chromium, driver, url, schema)) = browser_on_pg("browser_pause").await else {
        return;
    };
    let q = open(&url, &schema).await;
    for n in 0..TOTAL {
        q.push(format!("item {n}").into_bytes()).await.unwrap();
    }
    // After the first items the child's handlers wait for this file, so that its pool is
    // still running when the button is clicked, however long the browser takes.
    let gate: PathBuf = std::env::temp_dir().join(format!("{schema}.gate"));
    let _ = std::fs::remove_file(&gate);
    let total = TOTAL.to_string();
    let env = [
        (format!("{ENV}URL"), url.as_str()),
        (format!("{ENV}SCHEMA"), schema.as_str()),
        (format!("{ENV}GATE"), gate.to_str().unwrap()),
        (format!("{ENV}TOTAL"), total.as_str()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let mut worker = Worker(Some(
        child::command("pause_child", &env)
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the child"),
    ));
    // The other process runs: items leave the ready state.
    let handled = |s: &Stats| TOTAL - s.ready - s.delayed - s.in_flight - s.dead;
    store_when(&q, "the child's pool runs", |s| {
        handled(s) >= BEFORE_GATE as u64
    })
    .await;

    let addr = serve(pg_acting(&url, &schema).await).await;
    let (_driver, c) = session(&chromium, &driver).await;
    c.goto(&format!("http://{addr}/queues/{QUEUE}"))
        .await
        .unwrap();
    assert_eq!(text(&c, "#status").await, "Running");
    click(&c, Locator::Css("form.action[action$=\"/pause\"] button")).await;
    assert!(text(&c, "#done").await.contains("is paused"));
    // Committed: from here on only the claims already running hand out leases.
    let at_pause = q.refresh_stats().await.unwrap();
    assert!(at_pause.paused, "paused, as the store reads it");
    std::fs::write(&gate, b"open").unwrap();
    // The leases out are handled; then, over several of the claimer's poll intervals
    // (200 ms), nothing more is claimed.
    let drained = store_when(&q, "the leases out are handled", |s| s.in_flight == 0).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after = q.refresh_stats().await.unwrap();
    assert_eq!(
        (after.ready, after.in_flight),
        (drained.ready, 0),
        "nothing claimed while paused"
    );
    assert!(
        after.ready + CLAIM_ROUND >= at_pause.ready,
        "ready {} at the pause, {} after",
        at_pause.ready,
        after.ready
    );
    assert!(
        after.ready > 0,
        "the pause stopped the pool ({} handled)",
        handled(&after)
    );

    // The page shows it paused, with the Resume button.
    c.goto(&format!("http://{addr}/queues/{QUEUE}"))
        .await
        .unwrap();
    assert_eq!(text(&c, "#status").await, "Paused");
    assert_eq!(card(&c, "ready").await, after.ready.to_string());
    no_script(&c).await;
    screenshot(&c, "queue-paused").await;
    click(&c, Locator::Css("form.action[action$=\"/resume\"] button")).await;
    assert!(text(&c, "#done").await.contains("is running again"));

    // Resumed: the other process handles the rest, each item once (it says so and ends).
    store_when(&q, "resumed", |s| handled(s) == TOTAL).await;
    let out =
        tokio::task::spawn_blocking(move || worker.0.take().unwrap().wait_with_output().unwrap())
            .await
            .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the child: {said}");
    assert!(
        said.contains(&format!("DONE handled {TOTAL} unique {TOTAL}")),
        "{said}"
    );
    assert!(!q.refresh_stats().await.unwrap().paused);
    q.close().await.unwrap();
    c.close().await.unwrap();
    let _ = std::fs::remove_file(&gate);
    pg_drop(&url, &schema).await;
}

/// The pool of the pause test's second process: does nothing unless started by it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_child() {
    let Some([url, schema, gate, total]) = child::vars(ENV, ["URL", "SCHEMA", "GATE", "TOTAL"])
    else {
        return;
    };
    let total: usize = total.parse().unwrap();
    let q = open(&url, &schema).await;
    let ran: Arc<Mutex<Vec<u64>>> = Arc::default();
    let pool = leaseq_tokio::Pool::builder(q.clone())
        .workers(WORKERS as usize)
        .spawn({
            let ran = ran.clone();
            move |job: Job<Vec<u8>>| {
                let (ran, gate) = (ran.clone(), gate.clone());
                async move {
                    if ran.lock().unwrap().len() >= BEFORE_GATE {
                        while !Path::new(&gate).exists() {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                    }
                    ran.lock().unwrap().push(job.id.get());
                    Ok(())
                }
            }
        });
    // The parent's patience, twice over: then this process ends with a failure.
    let until = Instant::now() + 2 * PATIENCE;
    while ran.lock().unwrap().len() < total {
        assert!(
            Instant::now() < until,
            "{} of {total} handled",
            ran.lock().unwrap().len()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    pool.shutdown(Duration::from_secs(5)).await;
    let ids = ran.lock().unwrap().clone();
    let unique: BTreeSet<u64> = ids.iter().copied().collect();
    println!("DONE handled {} unique {}", ids.len(), unique.len());
    q.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_reads_the_finished_jobs_filtered_by_outcome() {
    let Some((chromium, driver, url, schema)) = browser_on_pg("browser_finished").await else {
        return;
    };
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
    assert_eq!(count_when(&c, "table#finished tbody tr", 5).await, 5);
    no_script(&c).await;
    screenshot(&c, "finished").await;
    // The outcome filter, chosen as a person would.
    click(
        &c,
        Locator::Css("select[name=\"outcome\"] option[value=\"dead\"]"),
    )
    .await;
    click(&c, Locator::Css("form.filter button")).await;
    // Every row shown once the filtered page is there, and each of them a dead letter.
    let all = count_when(&c, "table#finished tbody tr", 2).await;
    let dead = count_when(&c, "table#finished tbody tr[data-outcome=\"dead\"]", 2).await;
    assert_eq!((dead, all), (2, 2));
    c.close().await.unwrap();
    pg_drop(&url, &schema).await;
}
