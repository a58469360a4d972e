//! Periodic jobs across processes on one SQLite file: three OS processes (this test binary,
//! run again as children) run the same schedule, a tick every 100 ms for 100 ticks. A file
//! has one owner at a time (its `flock`), so they take turns: each loops opening the file
//! (a held file is `OpenError::Locked`), runs a fresh `Scheduler` and acks the ticks that
//! come due for a few hundred milliseconds, closes it, and lets another take over.
//!
//! A new owner's scheduler starts at its own wall clock and pushes the ticks within the
//! lead, most of which its predecessor pushed ahead (delayed, still in the file with their
//! keys): those are refused as duplicate keys. The lead (2 s) covers the handover, so no
//! tick falls between two owners. At the end every tick from the start to the end landed
//! exactly once: acked by one owner (its log) or still in the file.

#[path = "support/rng.rs"]
mod rng;

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use leaseq_async::core::schedule::{Calendar, Interval, Schedule};
use leaseq_async::{system_clock, Config, Scheduler, Timestamp};
use leaseq_smol::SmolRuntime;
use leaseq_sqlite::{BytesCodec, OpenError, Options, Sqlite, SqliteQueue};
use rng::Rng;

const EVERY: Duration = Duration::from_millis(100);
const TICKS: u64 = 100;
const LEAD: Duration = Duration::from_secs(2);
const PROCESSES: u64 = 3;

type Queue = SqliteQueue<Vec<u8>, SmolRuntime, BytesCodec>;

fn schedule() -> Schedule<Interval> {
    let every = Interval::new(EVERY, Timestamp::ZERO).unwrap();
    Schedule::new("sqlite-tick", every).unwrap().with_lead(LEAD)
}

/// The file, or `None` while another process owns it.
fn try_open(path: &Path) -> Option<Queue> {
    let opened = smol::block_on(
        leaseq_async::LeaseQueue::builder(Config::new(Duration::from_secs(5)))
            .runtime(SmolRuntime::global())
            .codec(BytesCodec)
            .open(Sqlite::file(path).options(Options::default())),
    );
    match opened {
        Ok(q) => Some(q),
        Err(OpenError::Locked(_)) => None,
        Err(e) => panic!("open: {e}"),
    }
}

/// One line per fact, each a single `write` on an `O_APPEND` file shared by the children.
fn log_line(log: &Path, line: String) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    f.write_all(format!("{line}\n").as_bytes()).unwrap();
}

fn nanos(t: Timestamp) -> u64 {
    t.as_nanos()
}

/// A child: takes turns owning the file until the end (plus a little), then exits.
#[test]
fn schedule_child() {
    let (Ok(path), Ok(log), Ok(start), Ok(end), Ok(seed)) = (
        std::env::var("LEASEQ_SCHEDULE_CHILD"),
        std::env::var("LEASEQ_SCHEDULE_LOG"),
        std::env::var("LEASEQ_SCHEDULE_START"),
        std::env::var("LEASEQ_SCHEDULE_END"),
        std::env::var("LEASEQ_SCHEDULE_SEED"),
    ) else {
        return;
    };
    let (path, log) = (PathBuf::from(path), PathBuf::from(log));
    let start = Timestamp::from_nanos(start.parse().unwrap());
    let end = Timestamp::from_nanos(end.parse().unwrap());
    let mut rng = Rng(seed.parse().unwrap());
    let stop = end.saturating_add(Duration::from_millis(300));
    while system_clock() < stop {
        let Some(q) = try_open(&path) else {
            std::thread::sleep(Duration::from_millis(5 + rng.below(10)));
            continue;
        };
        log_line(&log, format!("O {}", std::process::id()));
        let hold = Duration::from_millis(200 + rng.below(500));
        smol::block_on(async {
            let until = system_clock().saturating_add(hold);
            // A fresh scheduler, as a restarted process would have: its cursor at its
            // wall clock (or the schedule's start, not reached yet).
            let mut scheduler = Scheduler::new(schedule()).starting_at(start.max(system_clock()));
            while system_clock() < until.min(stop) {
                let step = scheduler
                    .run_once(&q, |tick| nanos(tick).to_be_bytes().to_vec())
                    .await
                    .expect("scheduled push");
                log_line(&log, format!("S {} {}", step.pushed, step.duplicates));
                for d in q.try_receive_batch(64) {
                    let tick = u64::from_be_bytes(d.item()[..8].try_into().unwrap());
                    d.ack().await.expect("ack");
                    log_line(&log, format!("A {tick}"));
                }
                smol::Timer::after(Duration::from_millis(20)).await;
            }
            q.close().await.expect("close");
        });
        // Let go of the file as an exiting process would: the store (its writer, the file
        // and the owner lock) goes once its driver lets go of it, which a busy executor may
        // put off; wait for that (at most 1 s), then give the others a turn.
        let store = q.store().clone();
        drop(q);
        let gone_by = system_clock().saturating_add(Duration::from_secs(1));
        while std::sync::Arc::strong_count(&store) > 1 && system_clock() < gone_by {
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(store);
        std::thread::sleep(Duration::from_millis(30 + rng.below(30)));
    }
}

#[test]
fn three_processes_take_turns_and_push_each_tick_once() {
    let dir = std::env::temp_dir();
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let path = dir.join(format!("leaseq-schedule-{}-{n}.db", std::process::id()));
    let log = dir.join(format!("leaseq-schedule-{}-{n}.log", std::process::id()));
    // Time for the children to start; then 100 ticks.
    let start = system_clock().saturating_add(Duration::from_millis(1500));
    let end = start.saturating_add(EVERY * TICKS as u32);
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..PROCESSES)
        .map(|k| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "schedule_child",
                    "--test-threads=1",
                    "--nocapture",
                ])
                .env("LEASEQ_SCHEDULE_CHILD", &path)
                .env("LEASEQ_SCHEDULE_LOG", &log)
                .env("LEASEQ_SCHEDULE_START", nanos(start).to_string())
                .env("LEASEQ_SCHEDULE_END", nanos(end).to_string())
                .env("LEASEQ_SCHEDULE_SEED", (k + 1).to_string())
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawn a child")
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a child failed");
    }

    // Every tick landed: acked by an owner (the log) or still in the file.
    let mut landed: BTreeMap<u64, u32> = BTreeMap::new();
    let text = std::fs::read_to_string(&log).unwrap();
    let (mut owners, mut turns, mut duplicates) = (Vec::new(), 0, 0);
    for line in text.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        match parts[..] {
            ["A", tick] => *landed.entry(tick.parse().unwrap()).or_default() += 1,
            ["O", pid] => {
                turns += 1;
                if !owners.contains(&pid) {
                    owners.push(pid);
                }
            }
            ["S", _, dups] => duplicates += dups.parse::<u64>().unwrap(),
            _ => panic!("bad log line {line:?}"),
        }
    }
    let db = rusqlite::Connection::open(&path).unwrap();
    let mut rows = db
        .prepare("SELECT payload FROM items WHERE dead = 0")
        .unwrap();
    for payload in rows.query_map([], |r| r.get::<_, Vec<u8>>(0)).unwrap() {
        let tick = u64::from_be_bytes(payload.unwrap()[..8].try_into().unwrap());
        *landed.entry(tick).or_default() += 1;
    }
    drop(rows);
    drop(db);
    for suffix in ["", "-wal", "-shm", "-lock"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let _ = std::fs::remove_file(&log);

    let twice: Vec<_> = landed.iter().filter(|(_, &n)| n > 1).collect();
    assert!(twice.is_empty(), "ticks landed more than once: {twice:?}");
    let every = Interval::new(EVERY, Timestamp::ZERO).unwrap();
    let first = nanos(every.next_after(start).unwrap());
    let expected: Vec<u64> = (0..)
        .map(|k| first + k * EVERY.as_nanos() as u64)
        .take_while(|&t| t <= nanos(end))
        .collect();
    let got: Vec<u64> = landed
        .keys()
        .copied()
        .filter(|&t| t <= nanos(end))
        .collect();
    assert_eq!(got, expected, "every tick from the start to the end, once");
    assert_eq!(expected.len(), TICKS as usize);
    // The file changed hands, and new owners met ticks pushed ahead by earlier ones.
    assert!(
        owners.len() >= 2 && turns > owners.len(),
        "{turns} turns by {owners:?}"
    );
    assert!(
        duplicates > 0,
        "no owner met a tick pushed ahead by another"
    );
}
