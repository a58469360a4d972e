//! The cost of a fan-out on SQLite (issue 33): 10,000 children into one callback
//! (`push_batch`, every child's ack also writing its graph row, the last one releasing the
//! callback in its commit) against 10,000 independent jobs, in the same run, alternated,
//! the median of five of each. Four consumers `receive_batch(256)` + `ack_batch`. Ignored
//! by default; run with
//!
//! ```text
//! cargo test --release -p leaseq-sqlite --test graph_bench -- --ignored --nocapture
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leaseq_async::dependencies::{BatchOn, DependencyStore};
use leaseq_async::Config;
use leaseq_sqlite::BytesCodec;
use leaseq_test_kit::sqlite::{self, remove, temp, BytesQueue};

const JOBS: u64 = 10_000;
const CONSUMERS: usize = 4;
const BATCH: usize = 256;

/// Receives and acks until `total` jobs are acked; the time from `start`.
fn drain(q: &BytesQueue, total: u64, start: Instant) -> Duration {
    let acked = Arc::new(AtomicU64::new(0));
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            let (q, acked) = (q.clone(), acked.clone());
            smol::spawn(async move {
                loop {
                    let ds = q.receive_batch(BATCH).await;
                    if ds.is_empty() {
                        break;
                    }
                    let n = ds.len() as u64;
                    assert_eq!(q.ack_batch(ds).await.accepted() as u64, n);
                    acked.fetch_add(n, Ordering::Relaxed);
                }
            })
        })
        .collect();
    smol::block_on(async {
        while acked.load(Ordering::Relaxed) < total {
            smol::Timer::after(Duration::from_micros(200)).await;
        }
        let elapsed = start.elapsed();
        q.close();
        for c in consumers {
            c.await;
        }
        elapsed
    })
}

/// Jobs per second: `fanout`, the batch and its callback; else independent jobs.
fn run(fanout: bool) -> f64 {
    let path = temp("graph-bench");
    let q = sqlite::open(&path, Config::new(Duration::from_secs(60)), BytesCodec);
    let jobs: Vec<Vec<u8>> = (0..JOBS).map(|i| i.to_le_bytes().to_vec()).collect();
    let start = Instant::now();
    let total = if fanout {
        let batch = q
            .store()
            .push_batch(jobs, b"callback".to_vec(), BatchOn::Complete);
        smol::block_on(batch).unwrap();
        JOBS + 1
    } else {
        smol::block_on(q.push_batch(jobs)).unwrap();
        JOBS
    };
    let elapsed = drain(&q, total, start);
    assert_eq!(q.stats().acked, total);
    drop(q);
    remove(&path);
    total as f64 / elapsed.as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
#[ignore = "a benchmark: run with --release -- --ignored --nocapture"]
fn fanout_against_independent_jobs() {
    run(false);
    run(true); // warm-up
    let (mut plain, mut fan) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        plain.push(run(false));
        fan.push(run(true));
    }
    let (plain, fan) = (median(plain), median(fan));
    println!(
        "SQLite, {JOBS} jobs: independent {plain:.0}/s, fan-out into one callback {fan:.0}/s \
         ({:.2}x)",
        fan / plain
    );
}
