//! The durable store's end-to-end benchmark (issue 9's goal): push -> receive -> ack with 4
//! producers and 4 consumers, at both durability levels, against a bare `rusqlite` loop
//! that writes the same records (insert, attempt update, delete) in the same batches.
//! Ignored by default; run with
//!
//! ```text
//! cargo test --release -p leaseq-sqlite --test bench -- --ignored --nocapture
//! ```
//!
//! Producers `try_push` chunks of `BATCH` items, then wait until they are durable
//! (`synced`): each producer holds at most one chunk not yet on disk. Consumers
//! `receive_batch(BATCH)` (the attempts are committed before the deliveries are handed out)
//! and `ack_batch` them (one commit). A second benchmark times durable pushes at a steady
//! 20k pushes/s (p50, p99, p99.9).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leaseq_async::{Config, Store};
use leaseq_sqlite::{BytesCodec, Durability, Options};
use leaseq_test_kit::sqlite::{self, remove, temp, BytesQueue};

const ITEMS: usize = 400_000;
const BATCH: usize = 256;
const PRODUCERS: usize = 4;
const CONSUMERS: usize = 4;
const PAYLOAD: usize = 64;

/// A queue of bytes on `path` at `durability`.
fn open_durable(path: &Path, durability: Durability) -> BytesQueue {
    let options = Options::new().durability(durability);
    sqlite::open_with(
        path,
        Config::new(Duration::from_secs(60)),
        BytesCodec,
        options,
    )
    .unwrap()
}

/// Items per second through the durable queue, and its commits.
fn leaseq(durability: Durability) -> (f64, u64) {
    let path = temp("leaseq");
    let q = open_durable(&path, durability);
    let acked = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|_| {
            let q = q.clone();
            smol::spawn(async move {
                let mut left = ITEMS / PRODUCERS;
                while left > 0 {
                    let n = left.min(BATCH);
                    for _ in 0..n {
                        q.try_push(vec![7u8; PAYLOAD]).unwrap();
                    }
                    q.store().synced().await.expect("committed");
                    left -= n;
                }
            })
        })
        .collect();
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            let (q, acked) = (q.clone(), acked.clone());
            smol::spawn(async move {
                loop {
                    let ds = q.receive_batch(BATCH).await;
                    if ds.is_empty() {
                        break;
                    }
                    let n = ds.len();
                    let r = q.ack_batch(ds).await;
                    assert_eq!(r.accepted(), n);
                    acked.fetch_add(n, Ordering::Relaxed);
                }
            })
        })
        .collect();
    smol::block_on(async {
        for p in producers {
            p.await;
        }
        while acked.load(Ordering::Relaxed) < ITEMS {
            smol::Timer::after(Duration::from_micros(200)).await;
        }
        q.close();
        for c in consumers {
            c.await;
        }
    });
    let rate = ITEMS as f64 / start.elapsed().as_secs_f64();
    let commits = q.store().commits();
    assert_eq!(q.stats().acked, ITEMS as u64);
    drop(q); // waits for the writer to close the file
    remove(&path);
    (rate, commits)
}

/// Items per second of a bare rusqlite loop: per batch, a transaction inserting the rows,
/// one marking their attempt, one deleting them (the records the store writes per item).
fn bare(durability: Durability) -> f64 {
    let path = temp("bare");
    let conn = rusqlite::Connection::open(&path).unwrap();
    let sync = match durability {
        Durability::ProcessCrash => "NORMAL",
        _ => "FULL",
    };
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = {sync};
         CREATE TABLE items (id INTEGER PRIMARY KEY, payload BLOB NOT NULL,
             attempts INTEGER NOT NULL, visible_at INTEGER NOT NULL, expires_at INTEGER,
             priority INTEGER NOT NULL, key BLOB, leased INTEGER NOT NULL DEFAULT 0,
             last_error TEXT, dead INTEGER NOT NULL DEFAULT 0, reason INTEGER, dead_at INTEGER);"
    ))
    .unwrap();
    let payload = vec![7u8; PAYLOAD];
    let start = Instant::now();
    let mut next = 0i64;
    while (next as usize) < ITEMS {
        let ids: Vec<i64> = (next..next + BATCH as i64).collect();
        next += BATCH as i64;
        let tx = conn.unchecked_transaction().unwrap();
        for id in &ids {
            tx.prepare_cached(
                "INSERT INTO items (id, payload, attempts, visible_at, expires_at, priority, \
                 key, leased, dead) VALUES (?1, ?2, 0, 0, NULL, 0, NULL, 0, 0)",
            )
            .unwrap()
            .execute(rusqlite::params![id, payload])
            .unwrap();
        }
        tx.commit().unwrap();
        let tx = conn.unchecked_transaction().unwrap();
        for id in &ids {
            tx.prepare_cached(
                "UPDATE items SET attempts = max(attempts, 1), leased = 1 WHERE id = ?1 AND dead = 0",
            )
            .unwrap()
            .execute([id])
            .unwrap();
        }
        tx.commit().unwrap();
        let tx = conn.unchecked_transaction().unwrap();
        for id in &ids {
            tx.prepare_cached("DELETE FROM items WHERE id = ?1")
                .unwrap()
                .execute([id])
                .unwrap();
        }
        tx.commit().unwrap();
    }
    let rate = ITEMS as f64 / start.elapsed().as_secs_f64();
    drop(conn);
    remove(&path);
    rate
}

#[test]
#[ignore = "a benchmark: run with --release -- --ignored --nocapture"]
fn durable_end_to_end_vs_bare_rusqlite() {
    println!(
        "{ITEMS} items of {PAYLOAD} bytes, {PRODUCERS} producers + {CONSUMERS} consumers, \
         batches of {BATCH}"
    );
    println!(
        "{:<14} {:>14} {:>10} {:>16} {:>7}",
        "durability", "leaseq items/s", "commits", "bare rusqlite/s", "ratio"
    );
    for durability in [Durability::PowerLoss, Durability::ProcessCrash] {
        let (rate, commits) = leaseq(durability);
        let bare = bare(durability);
        println!(
            "{:<14} {:>14.0} {:>10} {:>16.0} {:>7.2}",
            format!("{durability:?}"),
            rate,
            commits,
            bare,
            rate / bare
        );
    }
}

/// Durable push latency at a steady 20k pushes/s (8 tasks at 2.5k/s each, a consumer
/// draining): each `push(...).await` timed from its call to its return, durable.
fn push_latency(durability: Durability) -> (Duration, Duration, Duration, usize) {
    const TASKS: usize = 8;
    const RATE: u64 = 20_000;
    const RUN: Duration = Duration::from_secs(3);
    let path = temp("latency");
    let q = open_durable(&path, durability);
    let every = Duration::from_nanos(1_000_000_000 * TASKS as u64 / RATE);
    let start = Instant::now();
    let pushers: Vec<_> = (0..TASKS)
        .map(|k| {
            let q = q.clone();
            smol::spawn(async move {
                let mut lat = Vec::new();
                let mut at = start + every * k as u32 / TASKS as u32;
                while at < start + RUN {
                    smol::Timer::at(at).await;
                    let t = Instant::now();
                    q.push(vec![7u8; PAYLOAD]).await.unwrap();
                    lat.push(t.elapsed());
                    at += every;
                }
                lat
            })
        })
        .collect();
    let consumer = {
        let q = q.clone();
        smol::spawn(async move {
            loop {
                let ds = q.receive_batch(BATCH).await;
                if ds.is_empty() {
                    break;
                }
                let _acked = q.ack_batch(ds).await;
            }
        })
    };
    let mut lat: Vec<Duration> = smol::block_on(async {
        let mut all = Vec::new();
        for p in pushers {
            all.extend(p.await);
        }
        q.close();
        consumer.await;
        all
    });
    lat.sort();
    let pct = |p: f64| lat[((lat.len() - 1) as f64 * p) as usize];
    let out = (pct(0.5), pct(0.99), pct(0.999), lat.len());
    drop(q); // waits for the writer to close the file
    remove(&path);
    out
}

#[test]
#[ignore = "a benchmark: run with --release -- --ignored --nocapture"]
fn durable_push_latency_at_20k_per_s() {
    for durability in [Durability::PowerLoss, Durability::ProcessCrash] {
        let (p50, p99, p999, n) = push_latency(durability);
        println!(
            "{durability:?}: {n} durable pushes at 20k/s: p50 {p50:.2?}, p99 {p99:.2?}, \
             p99.9 {p999:.2?}"
        );
    }
}

/// Restart with `RESTART_ITEMS` live items (issue 9's goal: usable in <= 1 s): a file is
/// filled through the store itself (`try_push` in chunks, each made durable), closed, then
/// opened again three times, each timed from the call to `open` until the first `receive`
/// returns (its attempt committed). Prints each time and the median.
const RESTART_ITEMS: usize = 1_000_000;

fn open_bytes(path: &Path) -> BytesQueue {
    sqlite::open(path, Config::new(Duration::from_secs(60)), BytesCodec)
}

/// Closes the queue (its last commit and the WAL's checkpoint awaited) and drops it (the
/// writer closes the file before the drop returns).
fn close_and_settle(q: BytesQueue) {
    smol::block_on(async { q.close().await }).unwrap();
    drop(q);
}

#[test]
#[ignore = "a benchmark: run with --release -- --ignored --nocapture"]
fn restart_with_1m_live_items() {
    let path = temp("restart");
    let fill = Instant::now();
    {
        let q = open_bytes(&path);
        smol::block_on(async {
            let mut left = RESTART_ITEMS;
            while left > 0 {
                let n = left.min(16_384);
                for _ in 0..n {
                    q.try_push(vec![7u8; PAYLOAD]).unwrap();
                }
                q.store().synced().await.expect("committed");
                left -= n;
            }
        });
        assert_eq!(q.stats().ready, RESTART_ITEMS as u64);
        close_and_settle(q);
    }
    let size = std::fs::metadata(&path).map_or(0, |m| m.len());
    println!(
        "filled {RESTART_ITEMS} live items of {PAYLOAD} bytes in {:.2?} (file {:.1} MB)",
        fill.elapsed(),
        size as f64 / 1e6
    );
    let mut times = Vec::new();
    for run in 1..=3 {
        let start = Instant::now();
        let q = open_bytes(&path);
        let opened = start.elapsed();
        let d = smol::block_on(q.receive()).unwrap();
        let usable = start.elapsed();
        println!("run {run}: open {opened:.2?}, first receive returned at {usable:.2?}");
        assert_eq!(q.stats().ready + q.stats().in_flight, RESTART_ITEMS as u64);
        times.push(usable);
        drop(d);
        close_and_settle(q);
    }
    times.sort();
    println!(
        "restart with {RESTART_ITEMS} live items: usable in {:.2?} (median of 3)",
        times[1]
    );
    remove(&path);
}
