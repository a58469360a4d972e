//! Pause and resume across OS processes: a pool runs in this process while other processes
//! (this test binary re-executed, `pause_child`) pause the queue, push to it while it is
//! paused, and resume it. The pause stops the pool's claims within one claim (at most the
//! leases a claim already running takes: one per worker and the pool's prefetch); pushes while paused are kept;
//! the resume restarts the pool, and every item is handled exactly once.

use leaseq_test_kit::pg as common;

use leaseq_test_kit::gated::{gated_pool, open_after_the_pause, until_ran, Gated};

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::Duration;

use leaseq_async::Config;

const WORKERS: u64 = 2;
/// The most leases one round of the pool's claims takes: one per worker and the pool's
/// prefetch (its default, 32).
const CLAIM_ROUND: u64 = WORKERS + 32;
const FIRST: u64 = 120;
const WHILE_PAUSED: u64 = 10;

fn config() -> Config {
    Config::new(Duration::from_secs(30))
}

/// A child: opens the parent's queue and pauses it, pushes `WHILE_PAUSED` items, or
/// resumes it (`LEASEQ_PAUSE_ACTION`).
#[test]
fn pause_child() {
    let (Ok(url), Ok(schema), Ok(queue), Ok(action)) = (
        std::env::var("LEASEQ_PAUSE_URL"),
        std::env::var("LEASEQ_PAUSE_SCHEMA"),
        std::env::var("LEASEQ_PAUSE_QUEUE"),
        std::env::var("LEASEQ_PAUSE_ACTION"),
    ) else {
        return;
    };
    common::runtime().block_on(async {
        let q: leaseq_postgres::PgQueue<Vec<u8>> = leaseq_tokio::LeaseQueue::builder(config())
            .name(queue)
            .codec(leaseq_postgres::BytesCodec)
            .open(leaseq_postgres::Postgres::url(&url).options(common::options().schema(schema)))
            .await
            .expect("open");
        match action.as_str() {
            "pause" => assert_eq!(q.pause().await, Ok(true)),
            "resume" => assert_eq!(q.resume().await, Ok(true)),
            "push" => {
                for n in 0..WHILE_PAUSED {
                    q.push(format!("late {n}").into_bytes())
                        .await
                        .expect("push");
                }
                assert!(q.refresh_stats().await.expect("stats").paused);
            }
            other => panic!("unknown action {other}"),
        }
        q.close().await.expect("close");
    });
}

/// Runs the child `action` to its end.
async fn child(url: &str, queue: &str, action: &str) {
    let exe = std::env::current_exe().expect("the test binary");
    let mut child = Command::new(exe)
        .args(["--exact", "pause_child", "--test-threads=1", "--nocapture"])
        .env("LEASEQ_PAUSE_URL", url)
        .env("LEASEQ_PAUSE_SCHEMA", common::SCHEMA.name())
        .env("LEASEQ_PAUSE_QUEUE", queue)
        .env("LEASEQ_PAUSE_ACTION", action)
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn a child");
    let until = std::time::Instant::now() + Duration::from_secs(60);
    common::wait_success(&mut child, &format!("child {action}"), until).await;
}

#[test]
fn another_process_pauses_and_resumes_a_running_pool() {
    common::with_server(|url| async move {
        let name = common::unique("pause-procs");
        let q = common::process(&url, &name, config()).await;
        // After the first 10 items the handlers wait for this gate, so that the pool is
        // still running when the other process pauses the queue, however long it takes
        // to start.
        let Gated { pool, ran, gate } = gated_pool(&q, WORKERS as usize, 10);
        for n in 0..FIRST {
            q.push(format!("item {n}").into_bytes()).await.unwrap();
        }
        until_ran(&ran, 10, common::PATIENCE).await;

        child(&url, &name, "pause").await;
        // The pause is committed: from here on, only the claims already running hand out
        // leases (the workers' and the pool's prefetch, taken ahead), then none.
        // Several of the claimer's poll intervals (200 ms) and rescues; the leases out
        // are all handled, and nothing more is claimed.
        let (after, handled) =
            open_after_the_pause((&gate, &ran), &q, CLAIM_ROUND, common::PATIENCE).await;
        assert_eq!(handled, after, "nothing claimed since");
        assert!(
            handled < FIRST,
            "the pause stopped the pool ({handled} handled)"
        );

        // Another process pushes while paused: kept, not handled.
        child(&url, &name, "push").await;
        tokio::time::sleep(Duration::from_millis(1000)).await;
        assert_eq!(q.stats().delivered, after, "nothing claimed while paused");
        assert_eq!(ran.lock().unwrap().len() as u64, handled);
        let s = q.refresh_stats().await.unwrap();
        assert!(s.paused);
        assert_eq!(s.ready, FIRST + WHILE_PAUSED - handled, "{s:?}");
        let mut inspector = leaseq_postgres::PgInspector::connect(&url, common::SCHEMA.name())
            .await
            .expect("inspector");
        assert!(inspector.counts(&name).await.unwrap().paused);

        // Another process resumes: the pool handles everything, each item once.
        child(&url, &name, "resume").await;
        let total = (FIRST + WHILE_PAUSED) as usize;
        let until = std::time::Instant::now() + common::PATIENCE;
        while ran.lock().unwrap().len() < total {
            assert!(
                std::time::Instant::now() < until,
                "resumed: {} of {total} handled; last error {:?}",
                ran.lock().unwrap().len(),
                q.store().last_error()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        pool.shutdown(Duration::from_secs(5)).await;
        let ids = ran.lock().unwrap().clone();
        let unique: BTreeSet<u64> = ids.iter().copied().collect();
        assert_eq!((ids.len(), unique.len()), (total, total), "each once");
        let s = q.refresh_stats().await.unwrap();
        assert!(!s.paused);
        assert!(!inspector.counts(&name).await.unwrap().paused);
        q.close().await.unwrap();
    });
}
