//! The seeded fault harness: producers (`push(..).await` and `try_push`) and consumers
//! (ack, nack, dead letter) run on a durable queue while faults are injected in a seeded
//! order: the disk filled under the writer (`PRAGMA max_page_count` on its connection,
//! then raised), the file's write lock held by another connection past the busy timeout
//! (then released), a second opener in this process and in another one, a clean restart
//! (a burst of `try_push`, the queue dropped and opened again). Every answer goes
//! to an append-only log. The run ends with a crash in the middle of a last fault (the
//! writer halted while its commits fail, as if the process died then); after a reopen the
//! log is checked (see `support/log.rs`): every push answered `Ok` is in the file or was
//! acked, everything accepted before a clean close too, an item whose ack answered `Ok`
//! never comes back, attempts never go down, every refusal is typed.
//!
//! CI runs `LEASEQ_FAULT_ROUNDS` = 3 rounds by default (each round one fault of each
//! kind); `LEASEQ_FAULT_ROUNDS=200` gives 200 per kind. `LEASEQ_FAULT_SEED` picks the seed.

#![cfg(feature = "fault-injection")]

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leaseq_async::Failure;
use leaseq_sqlite::{OpenError, Options};
use leaseq_test_kit::rng::Rng;
use support::log::{check, Fact, Log};
use support::{fill_disk, free_disk, open_default, open_with, remove, run_child, temp, Queue};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn options() -> Options {
    Options::new()
        .commit_timeout(Duration::from_millis(100))
        .busy_timeout(Duration::from_millis(10))
}

/// Waits (bounded) until `f` holds.
fn wait_until(what: &str, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !f() {
        if start.elapsed() > Duration::from_secs(10) {
            eprintln!("gave up waiting: {what}");
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    true
}

fn producer(q: Queue, log: Arc<Log>, stop: Arc<AtomicBool>, seed: u64) -> smol::Task<()> {
    smol::spawn(async move {
        let mut rng = Rng(seed);
        while !stop.load(Ordering::Relaxed) {
            if q.stats().live() > 300 {
                smol::Timer::after(Duration::from_millis(2)).await;
                continue;
            }
            let payload = vec![rng.below(256) as u8; 200 + rng.below(600) as usize];
            let refused = if rng.below(5) == 0 {
                let r = q.try_push(payload);
                let refused = r.is_err();
                log.push(r, false);
                refused
            } else {
                let r = q.push(payload).await;
                let refused = r.is_err();
                log.push(r, true);
                refused
            };
            if refused {
                smol::Timer::after(Duration::from_millis(3)).await;
            }
        }
    })
}

fn consumer(q: Queue, log: Arc<Log>, stop: Arc<AtomicBool>, seed: u64) -> smol::Task<()> {
    smol::spawn(async move {
        let mut rng = Rng(seed);
        loop {
            let Ok(d) = q.receive_timeout(Duration::from_millis(20)).await else {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                continue;
            };
            let id = d.id().get();
            log.add(Fact::Delivered(id, d.attempt()));
            match rng.below(100) {
                0..80 => log.settle(id, d.ack().await, Fact::AckOk(id)),
                80..95 => {
                    let failure = Failure::error("retry").retry_after(Duration::ZERO);
                    log.settle(id, d.nack_with(failure).await, Fact::NackOk(id))
                }
                _ => log.settle(id, d.dead_letter("poison").await, Fact::DeadOk(id)),
            }
        }
    })
}

/// The child's part of the second-process opener: tries to open the file, prints what
/// it was told.
#[test]
fn faults_opener_child() {
    support::open_and_print_kind("LEASEQ_OPENER_CHILD");
}

#[derive(Default, Debug)]
struct Injected {
    disk_full: usize,
    locked: usize,
    opener_here: usize,
    opener_process: usize,
    restart: usize,
    not_triggered: usize,
}

/// One fault of `which` kind; `false` if something answered wrongly.
fn inject(
    which: u64,
    q: &Queue,
    path: &Path,
    rng: &mut Rng,
    n: &mut Injected,
) -> Result<(), String> {
    let store = q.store();
    match which {
        0 | 1 => {
            let before = store.commit_failures();
            let other = if which == 0 {
                fill_disk(q);
                None
            } else {
                let other = rusqlite::Connection::open(path).map_err(|e| e.to_string())?;
                other
                    .busy_timeout(Duration::from_secs(5))
                    .map_err(|e| e.to_string())?;
                other
                    .execute_batch("BEGIN IMMEDIATE;")
                    .map_err(|e| e.to_string())?;
                Some(other)
            };
            if wait_until("a commit failure", || store.commit_failures() > before) {
                if which == 0 {
                    n.disk_full += 1;
                } else {
                    n.locked += 1;
                }
            } else {
                n.not_triggered += 1;
            }
            // Sometimes past the commit timeout, so that waits give up.
            std::thread::sleep(Duration::from_millis(rng.below(250)));
            match other {
                None => free_disk(q),
                Some(other) => other
                    .execute_batch("ROLLBACK;")
                    .map_err(|e| e.to_string())?,
            }
            if !wait_until("recovery", || !store.journal_failed()) {
                return Err(format!("no recovery: {:?}", store.last_commit_error()));
            }
        }
        2 => match open_default(path) {
            Err(OpenError::Locked(_)) => n.opener_here += 1,
            Err(e) => return Err(format!("second opener here: {e:?}")),
            Ok(_) => return Err("second opener here: opened".into()),
        },
        _ => {
            let (_, out) = run_child(
                "faults_opener_child",
                &[("LEASEQ_OPENER_CHILD", path.display().to_string())],
                None,
            );
            if !out.contains("KIND Locked") {
                return Err(format!("second opener process: {out}"));
            }
            n.opener_process += 1;
        }
    }
    Ok(())
}

/// The load on one open queue: producers and consumers until stopped.
struct Load {
    stop: Arc<AtomicBool>,
    tasks: Vec<smol::Task<()>>,
}

impl Load {
    fn start(q: &Queue, log: &Arc<Log>, seed: u64) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for p in 0..2 {
            tasks.push(producer(q.clone(), log.clone(), stop.clone(), seed + p));
        }
        for c in 0..3 {
            tasks.push(consumer(
                q.clone(),
                log.clone(),
                stop.clone(),
                seed + 10 + c,
            ));
        }
        Load { stop, tasks }
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        smol::block_on(async {
            for t in self.tasks {
                t.await;
            }
        });
    }
}

#[test]
fn seeded_faults_lose_nothing_answered_ok() {
    let rounds = env_or("LEASEQ_FAULT_ROUNDS", 3);
    let seed = env_or("LEASEQ_FAULT_SEED", 16);
    let path = temp("faults");
    let log = Arc::new(Log::default());
    let mut q = open_with(&path, options()).unwrap();
    let mut load = Load::start(&q, &log, seed * 1000);
    let mut rng = Rng(seed);
    let mut n = Injected::default();
    let mut errors = Vec::new();
    let started = Instant::now();
    for round in 0..rounds {
        let first = rng.below(5);
        for k in 0..5 {
            std::thread::sleep(Duration::from_millis(rng.below(30)));
            let which = (first + k) % 5;
            if which == 4 {
                // A clean restart: the load stopped, a burst of fire-and-forget pushes, the
                // queue dropped (its flush) and opened again.
                load.stop();
                for i in 0..200u32 {
                    log.push(q.try_push(i.to_le_bytes().to_vec()), false);
                }
                log.add(Fact::CleanClose);
                drop(q);
                q = open_with(&path, options()).unwrap();
                n.restart += 1;
                load = Load::start(&q, &log, (seed * 1000 + round + 1) * 100);
            } else if let Err(e) = inject(which, &q, &path, &mut rng, &mut n) {
                errors.push(e);
            }
        }
    }
    let faulted = started.elapsed();

    // The crash: a last fault, the load stopped while it lasts, the writer halted.
    let crash_kind = rng.below(2);
    let before = q.store().commit_failures();
    let other = if crash_kind == 0 {
        fill_disk(&q);
        None
    } else {
        let other = rusqlite::Connection::open(&path).unwrap();
        other.busy_timeout(Duration::from_secs(5)).unwrap();
        other.execute_batch("BEGIN IMMEDIATE;").unwrap();
        Some(other)
    };
    assert!(wait_until("the last fault", || q.store().commit_failures() > before));
    std::thread::sleep(Duration::from_millis(rng.below(200)));
    load.stop();
    q.store().halt();
    std::mem::forget(q);
    if let Some(other) = other {
        other.execute_batch("ROLLBACK;").unwrap();
    }

    // Reopen: drain the live items (each delivered once: the visibility is 30 s), read the
    // dead letters.
    let q = open_default(&path).unwrap();
    let dead = leaseq_test_kit::sqlite::dead_attempts(&q);
    let mut present = BTreeMap::new();
    while let Some(d) = q.try_receive() {
        present.insert(d.id().get(), d.attempt());
        std::mem::forget(d);
    }
    drop(q);
    let facts = log.facts();
    let verdict = check(&facts, &present, &dead);
    println!(
        "faults (seed {seed}, {rounds} rounds, {faulted:.1?}): {n:?}; answers: {:?}; after reopen: {} live, {} dead; violations: {}",
        verdict.counts,
        present.len(),
        dead.len(),
        verdict.violations.len()
    );
    assert!(errors.is_empty(), "{errors:#?}");
    assert!(
        verdict.violations.is_empty(),
        "seed {seed}: {:#?}",
        &verdict.violations[..verdict.violations.len().min(20)]
    );
    assert_eq!(
        (
            n.disk_full,
            n.locked,
            n.opener_here,
            n.opener_process,
            n.restart
        ),
        (
            rounds as usize,
            rounds as usize,
            rounds as usize,
            rounds as usize,
            rounds as usize
        ),
        "every fault took effect"
    );
    remove(&path);
}
