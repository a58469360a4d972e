//! A schedule's state in the queue file: committed with its ticks, back after a reopen
//! (the restarted scheduler resumes from it, catches up and takes back the tick it pushed
//! ahead), shown by `FileView` without opening the queue; a format-2 file (no `schedules`
//! table) read as having none and migrated at open.

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use leaseq_async::core::schedule::{Interval, Schedule};
use leaseq_async::{Reason, Scheduler, StoredState, Timestamp};
use leaseq_sqlite::{FileView, FORMAT_VERSION};

fn secs(s: u64) -> Timestamp {
    Timestamp::from_duration(Duration::from_secs(s))
}

fn schedule() -> Schedule<Interval> {
    let minute = Interval::new(Duration::from_secs(60), Timestamp::ZERO).unwrap();
    Schedule::new("minutely", minute)
        .unwrap()
        .with_lead(Duration::from_secs(2))
}

/// A scheduler on a wall clock the test sets (in ms).
fn scheduler(clock: &Arc<AtomicU64>) -> Scheduler<Interval> {
    let clock = clock.clone();
    Scheduler::new(schedule())
        .with_clock(move || Timestamp::from_nanos(clock.load(Ordering::Relaxed) * 1_000_000))
}

#[test]
fn a_schedule_survives_a_reopen_and_the_inspector_shows_it() {
    let path = support::temp("schedule-file");
    let clock = Arc::new(AtomicU64::new(1_000_000));
    let q = support::open_default(&path).unwrap();
    smol::block_on(async {
        let mut s = scheduler(&clock);
        // Set up at 1000 s; at 1018.5 s tick 1020 is pushed ahead.
        s.run_once(&q, |t| t.as_nanos().to_be_bytes().to_vec())
            .await
            .unwrap();
        clock.store(1_018_500, Ordering::Relaxed);
        let step = s
            .run_once(&q, |t| t.as_nanos().to_be_bytes().to_vec())
            .await
            .unwrap();
        assert_eq!(step.pushed, 1);
        q.close().await.unwrap();
    });
    drop(q);

    let view = FileView::open(&path).unwrap();
    let shown = view.schedules().unwrap();
    assert_eq!(shown.len(), 1);
    let s = &shown[0];
    assert_eq!((s.name.as_str(), s.cursor), ("minutely", secs(1020)));
    assert_eq!(
        (s.last_tick, s.next_tick),
        (Some(secs(1020)), Some(secs(1080)))
    );
    assert_eq!(s.moved_at, Timestamp::from_nanos(1_018_500_000_000));
    assert_eq!(s.calendar.as_deref(), Some("every 60s"));
    drop(view);

    // Down until 1200.5 s: a restarted scheduler resumes from the file's cursor: tick 1200
    // runs once (1080 and 1140 skipped), and 1020, pushed ahead, is taken back.
    let q = support::open_default(&path).unwrap();
    smol::block_on(async {
        assert_eq!(q.schedules().await.unwrap(), shown);
        clock.store(1_200_500, Ordering::Relaxed);
        let step = scheduler(&clock)
            .run_once(&q, |t| t.as_nanos().to_be_bytes().to_vec())
            .await
            .unwrap();
        assert_eq!((step.pushed, step.withdrawn), (1, 1));
        q.close().await.unwrap();
    });
    drop(q);
    let view = FileView::open(&path).unwrap();
    let tick = |bytes: &[u8]| u64::from_be_bytes(bytes[..8].try_into().unwrap());
    let live = view.items(leaseq_async::Page::first(10)).unwrap();
    let live: Vec<u64> = live
        .iter()
        .map(|i| tick(i.payload.as_deref().unwrap()))
        .collect();
    assert_eq!(live, [secs(1200).as_nanos()]);
    let dead = view.dead_letters(leaseq_async::Page::first(10)).unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].state, StoredState::Dead);
    assert_eq!(dead[0].reason, Some(Reason::Expired));
    assert_eq!(
        tick(dead[0].payload.as_deref().unwrap()),
        secs(1020).as_nanos()
    );
    assert_eq!(view.schedules().unwrap()[0].cursor, secs(1200));
    drop(view);
    support::remove(&path);
}

#[test]
fn a_format_2_file_reads_as_having_no_schedules_and_is_migrated() {
    let path = support::temp("schedule-v2");
    drop(support::open_default(&path).unwrap());
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "{} DROP TABLE schedules; PRAGMA user_version = 2;",
            support::BEFORE_FLOW
        ))
        .unwrap();
    }
    assert!(FileView::open(&path)
        .unwrap()
        .schedules()
        .unwrap()
        .is_empty());
    let clock = Arc::new(AtomicU64::new(1_000_000));
    let q = support::open_default(&path).unwrap();
    smol::block_on(async {
        scheduler(&clock)
            .run_once(&q, |t| t.as_nanos().to_be_bytes().to_vec())
            .await
            .unwrap();
        q.close().await.unwrap();
    });
    drop(q);
    assert_eq!(support::user_version(&path), FORMAT_VERSION);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM schedules", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 1);
    drop(conn);
    support::remove(&path);
}
