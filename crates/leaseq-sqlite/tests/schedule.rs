//! Periodic jobs across processes on one SQLite file, the schedules' cursors kept in the
//! file: three OS processes (this test binary, run again as children) run two schedules, a
//! tick every 200 ms for 100 ticks, one with `CatchUp::Once` and one with `CatchUp::All`.
//! A file has one owner at a time (its `flock`), so they take turns: each loops opening
//! the file (a held file is `OpenError::Locked`), runs fresh `Scheduler`s (as a restarted
//! process would) and acks the ticks that come due for a few hundred milliseconds, closes
//! it, and lets another take over. Twice, every process is killed (SIGKILL) for 3 s, more
//! than the 2 s lead, and three new ones start.
//!
//! A new owner's schedulers resume from the cursors in the file, so no tick is pushed
//! twice and none meets a duplicate key. After each outage `Once` pushes one catch-up tick
//! and takes back the ticks pushed ahead that came due meanwhile (dead letters, expired);
//! `All` pushes every missed tick. The check is the test kit's `schedule_check`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use leaseq_async::{system_clock, Config, Reason, Scheduler, Timestamp};
use leaseq_sqlite::{BytesCodec, OpenError, Options};
use leaseq_test_kit::rng::Rng;
use leaseq_test_kit::schedule_check::{self as check, log_line, Record, Run, Seen, ALL, ONCE};
use leaseq_test_kit::schedule_run::{now_ns, schedule, through_outages, EVERY, PROCESSES, TICKS};
use leaseq_test_kit::sqlite::BytesQueue as Queue;
use leaseq_test_kit::{child, sqlite};

/// The file, or `None` while another process owns it.
fn try_open(path: &Path) -> Option<Queue> {
    let config = Config::new(Duration::from_secs(5));
    let opened = sqlite::open_with(path, config, BytesCodec, Options::default());
    match opened {
        Ok(q) => Some(q),
        Err(OpenError::Locked(_)) => None,
        Err(e) => panic!("open: {e}"),
    }
}

/// A child: takes turns owning the file until the end (plus a little), then exits; or is
/// killed.
#[test]
fn schedule_child() {
    let Some([path, log, start, end, seed]) =
        child::vars("LEASEQ_SCHEDULE_", ["CHILD", "LOG", "START", "END", "SEED"])
    else {
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
            // Fresh schedulers, as a restarted process would have: they resume from the
            // cursors in the file (a schedule the file does not know starts at `start`).
            let mut schedulers = [ONCE, ALL]
                .map(|which| (which, Scheduler::new(schedule(which)).starting_at(start)));
            while system_clock() < until.min(stop) {
                for (which, s) in &mut schedulers {
                    let which = *which;
                    let step = s
                        .run_once(&q, |tick| check::job(which, tick.as_nanos(), now_ns()))
                        .await
                        .expect("schedule step");
                    log_line(&log, check::step_line(which, &step));
                }
                for d in q.try_receive_batch(64) {
                    log_line(&log, check::ran_line(d.id().get(), d.item()));
                    d.ack().await.expect("ack");
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
fn three_processes_through_two_outages_push_each_tick_once() {
    let dir = std::env::temp_dir();
    let n = now_ns();
    let path = dir.join(format!("leaseq-schedule-{}-{n}.db", std::process::id()));
    let log = dir.join(format!("leaseq-schedule-{}-{n}.log", std::process::id()));
    // Time for the children to start; then 100 ticks.
    let start = system_clock().saturating_add(Duration::from_millis(1500));
    let end = start.saturating_add(EVERY * TICKS);
    let kills = through_outages(start, |generation, k| {
        vec![
            ("LEASEQ_SCHEDULE_CHILD", path.clone().into_os_string()),
            ("LEASEQ_SCHEDULE_LOG", log.clone().into_os_string()),
            ("LEASEQ_SCHEDULE_START", start.as_nanos().to_string().into()),
            ("LEASEQ_SCHEDULE_END", end.as_nanos().to_string().into()),
            (
                "LEASEQ_SCHEDULE_SEED",
                (generation * 10 + k + 1).to_string().into(),
            ),
        ]
    });

    // What the children recorded, and what the file holds.
    let check::Log {
        mut records,
        duplicates,
        withdrawn,
        owners,
        ..
    } = check::read_log(&log);
    let db = rusqlite::Connection::open(&path).unwrap();
    let mut rows = db
        .prepare("SELECT id, payload, dead, reason FROM items")
        .unwrap();
    let found = rows
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, Vec<u8>>(1)?,
                r.get::<_, bool>(2)?,
                r.get::<_, Option<i64>>(3)?,
            ))
        })
        .unwrap();
    for row in found {
        let (id, payload, dead, reason) = row.unwrap();
        let seen = if dead {
            let expired = reason == Some(i64::from(Reason::Expired.code()));
            Seen::Dead { expired }
        } else {
            Seen::Live
        };
        records.extend(Record::of(id as u64, &payload, seen));
    }
    let stored: Vec<(String, i64)> = db
        .prepare("SELECT name, cursor FROM schedules ORDER BY name")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    drop(rows);
    drop(db);
    sqlite::remove(&path);

    let run = Run::new(start, end, kills);
    check::check(&records, &run, duplicates, withdrawn);
    // Both cursors are in the file, past the end; the file changed hands.
    assert_eq!(
        stored.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["all", "once"]
    );
    assert!(stored.iter().all(|&(_, c)| c as u64 >= run.last));
    assert!(owners.len() > PROCESSES as usize, "owners: {owners:?}");
}
