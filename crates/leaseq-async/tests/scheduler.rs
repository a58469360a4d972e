//! The scheduler on virtual time, its cursor kept in the memory store: three processes with
//! skewed wall clocks running one schedule into one queue land each tick once; two
//! schedulers stepping side by side never meet a duplicate key; a lost compare-and-set
//! plans again; a wall clock that jumps forward catches up by the policy, one that steps
//! back reruns nothing; a restart resumes from the stored cursor, catches up per `CatchUp`
//! and takes back the ticks pushed ahead that the policy no longer runs (no burst); store
//! failures neither lose nor repeat a tick.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::core::schedule::{CatchUp, Interval, Schedule, Skipped};
use leaseq_async::{
    Config, LeaseQueue, Page, Push, PushError, Reason, Runtime, ScheduleCommit, Scheduler,
    SchedulerError, SimRuntime, Timestamp,
};
use leaseq_test_kit::sim;

/// The wall clock at virtual time zero: 2023-11-14T22:00:00Z, on the hour.
const EPOCH: u64 = 1_699_999_200;

fn wall(s: u64) -> Timestamp {
    Timestamp::from_duration(Duration::from_secs(EPOCH + s))
}

/// A wall clock: the runtime's virtual time, plus `EPOCH`, plus an offset in ms that a test
/// can move (a clock stepped, or skewed).
fn clock(rt: &SimRuntime, offset_ms: Arc<AtomicI64>) -> impl Fn() -> Timestamp + Send + Sync {
    let rt = rt.clone();
    move || {
        let base = rt.now().saturating_add(Duration::from_secs(EPOCH));
        let off = offset_ms.load(Ordering::Relaxed);
        let d = Duration::from_millis(off.unsigned_abs());
        if off >= 0 {
            base.saturating_add(d)
        } else {
            base.saturating_sub(d)
        }
    }
}

mod support;

fn every(secs: u64) -> Interval {
    Interval::new(Duration::from_secs(secs), Timestamp::ZERO).unwrap()
}

/// Three processes, wall clocks behind by 0, 30 and 70 ms, run one every-second schedule
/// with a 200 ms lead into one queue for 100 s; a consumer acks each job as it comes. Each
/// tick lands exactly once, in order, on time (within the skew): a process whose clock is
/// behind reads the cursor the others moved and pushes nothing again.
#[test]
fn three_skewed_processes_land_each_tick_once() {
    sim::run(|rt| async move {
        let q: LeaseQueue<Timestamp, SimRuntime> =
            LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(5))).unwrap();
        let schedule = Schedule::new("tick", every(1))
            .unwrap()
            .with_lead(Duration::from_millis(200));
        let mut tasks = Vec::new();
        let results = Arc::new(Mutex::new(Vec::new()));
        for skew in [0, -30, -70] {
            let s = Scheduler::new(schedule.clone())
                .with_clock(clock(&rt, Arc::new(AtomicI64::new(skew))));
            let (q, results) = (q.clone(), results.clone());
            tasks.push(rt.spawn(Box::pin(async move {
                let ended = s.run(q, |tick| tick).await;
                results
                    .lock()
                    .unwrap()
                    .push(ended.map_err(|e| e.to_string()));
            })));
        }
        let landed = Arc::new(Mutex::new(Vec::new()));
        tasks.push(rt.spawn(Box::pin({
            let (q, rt, landed) = (q.clone(), rt.clone(), landed.clone());
            async move {
                while let Some(d) = q.receive().await {
                    // On time, by the clock of the process that pushed it first
                    // (at most 70 ms behind the true one).
                    let now = rt.now().saturating_add(Duration::from_secs(EPOCH));
                    let late = now.saturating_duration_since(*d.item());
                    assert!(now >= *d.item() && late <= Duration::from_millis(70));
                    landed.lock().unwrap().push(*d.item());
                    d.ack().await.unwrap();
                }
            }
        })));
        rt.sleep_until(Timestamp::from_duration(Duration::from_millis(100_500)))
            .await;
        let _ = q.close();
        for t in tasks {
            t.await;
        }
        assert!(results.lock().unwrap().iter().all(Result::is_ok));
        // The schedule starts at the first commit, by the process on time (spawned
        // first): at tick 0, which is not after it.
        let expected: Vec<_> = (1..=100).map(wall).collect();
        assert_eq!(*landed.lock().unwrap(), expected);
    });
}

/// One process, stepped by hand: a jump forward skips all but the latest tick (`Once`); a
/// second scheduler reads the stored cursor and pushes nothing again; a tick whose key a
/// live item holds (pushed by a driver without the shared cursor) is a duplicate, counted;
/// a step back reruns nothing and commits nothing; a refused push leaves the stored cursor
/// where it was.
#[test]
fn run_once_catches_up_and_never_reruns() {
    sim::run(|rt| async move {
        let q: LeaseQueue<Timestamp, SimRuntime> =
            LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(5))).unwrap();
        let offset = Arc::new(AtomicI64::new(0));
        let schedule = Schedule::new("ten", every(10)).unwrap();
        let mut s = Scheduler::new(schedule.clone()).with_clock(clock(&rt, offset.clone()));
        // Started at EPOCH (a tick itself, not after the cursor): nothing yet, but the
        // cursor is stored.
        let step = s.run_once(&q, |t| t).await.unwrap();
        assert_eq!((step.pushed, step.wake_at), (0, wall(10)));
        assert_eq!(s.cursor(), Some(wall(0)));
        let stored = q.schedules().await.unwrap();
        assert_eq!(stored.len(), 1);
        assert_eq!(
            (stored[0].cursor, stored[0].next_tick),
            (wall(0), Some(wall(10)))
        );
        assert_eq!(stored[0].last_tick, None);
        assert_eq!(stored[0].calendar.as_deref(), Some("every 10s"));

        // The wall clock jumps 95 s: 10 .. 80 skipped, 90 pushed (due now).
        offset.store(95_000, Ordering::Relaxed);
        let step = s.run_once(&q, |t| t).await.unwrap();
        assert_eq!(step.pushed, 1);
        let skipped = Skipped {
            first: wall(10),
            last: wall(80),
        };
        assert_eq!((step.skipped, step.wake_at), (Some(skipped), wall(100)));
        assert_eq!(q.stats().ready, 1);
        let stored = &q.schedules().await.unwrap()[0];
        assert_eq!(
            (stored.last_tick, stored.next_tick),
            (Some(wall(90)), Some(wall(100)))
        );
        assert_eq!(stored.moved_at, wall(95));

        // Another process with the same schedule (its `starting_at` is for a schedule
        // the store does not know): it resumes from the stored cursor, nothing to push.
        let mut other = Scheduler::new(schedule.clone())
            .with_clock(clock(&rt, offset.clone()))
            .starting_at(wall(80));
        let step = other.run_once(&q, |t| t).await.unwrap();
        assert_eq!((step.pushed, step.duplicates), (0, 0));
        assert_eq!(other.cursor(), Some(wall(90)));
        assert_eq!(q.stats().ready, 1);

        // Tick 100's key held by a job pushed outside the scheduler: the scheduler's
        // push of it is refused as a duplicate (the second guard), and counted.
        q.push_with(
            wall(100),
            Push::new().key(schedule.key(wall(100)).as_bytes()),
        )
        .await
        .unwrap();
        offset.store(100_000, Ordering::Relaxed);
        let step = s.run_once(&q, |t| t).await.unwrap();
        assert_eq!((step.pushed, step.duplicates), (0, 1));
        assert_eq!(q.stats().ready, 2);

        // The clock steps back 50 s: nothing is due, tick 90 is not run again, and
        // nothing is committed (the stored state is as it was).
        offset.store(50_000, Ordering::Relaxed);
        let before = q.schedules().await.unwrap();
        let step = s.run_once(&q, |t| t).await.unwrap();
        assert_eq!(
            (step.pushed, step.duplicates, step.wake_at),
            (0, 0, wall(110))
        );
        assert_eq!(s.cursor(), Some(wall(100)));
        assert_eq!(q.schedules().await.unwrap(), before);

        // Closed: the push of tick 120 is refused, and nothing of the step is done: the
        // stored cursor stays at 100, so the next process resumes before tick 120.
        offset.store(125_000, Ordering::Relaxed);
        let _ = q.close();
        let err = s.run_once(&q, |t| t).await.unwrap_err();
        assert!(matches!(err, SchedulerError::Push(PushError::Closed(t)) if t == wall(120)));
        assert_eq!(q.schedules().await.unwrap()[0].cursor, wall(100));
    });
}

/// Two schedulers of one schedule on one queue, stepping side by side (one's clock 40 ms
/// ahead, the order of their steps alternating), a consumer acking every job at once (so a
/// tick's key is free again right after): every tick once, and no push ever meets a
/// duplicate key: the stored cursor, not the key, keeps them apart.
#[test]
fn two_schedulers_on_one_queue_push_each_tick_once() {
    sim::run(|rt| async move {
        let q: LeaseQueue<Timestamp, SimRuntime> =
            LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(5))).unwrap();
        let schedule = Schedule::new("pair", every(1))
            .unwrap()
            .with_lead(Duration::from_millis(300));
        let mut a =
            Scheduler::new(schedule.clone()).with_clock(clock(&rt, Arc::new(AtomicI64::new(0))));
        let mut b = Scheduler::new(schedule).with_clock(clock(&rt, Arc::new(AtomicI64::new(40))));
        let (mut pushed, mut duplicates) = (0, 0);
        let mut landed = Vec::new();
        for k in 0..200u64 {
            // Every 100 ms.
            rt.sleep_until(Timestamp::from_duration(Duration::from_millis(100 * k)))
                .await;
            let (first, second) = if k % 2 == 0 {
                (&mut a, &mut b)
            } else {
                (&mut b, &mut a)
            };
            for s in [first, second] {
                let step = s.run_once(&q, |t| t).await.unwrap();
                pushed += step.pushed;
                duplicates += step.duplicates;
            }
            while let Some(d) = q.try_receive() {
                landed.push(*d.item());
                d.ack().await.unwrap();
            }
        }
        assert_eq!(duplicates, 0, "the cursor keeps the schedulers apart");
        // Ticks 1 ..= 19 were due by 19.9 s; 20 was pushed ahead and is still delayed.
        assert_eq!(landed, (1..=19).map(wall).collect::<Vec<_>>());
        assert_eq!(pushed, 20);
    });
}

/// A scheduler reads the cursor; before its commit another process commits a step of the
/// same schedule (pushing tick 10). The commit is refused as moved, the scheduler reads
/// again and plans again: nothing more to push, no error, no duplicate.
#[test]
fn a_lost_race_plans_again() {
    sim::run(|rt| async move {
        let (q, store) = support::faulty::queue(&rt);
        let schedule = Schedule::new("race", every(10)).unwrap();
        let wall_u32 = |t: Timestamp| (t.as_nanos() / 1_000_000_000 - EPOCH) as u32;
        let mut s =
            Scheduler::new(schedule.clone()).with_clock(clock(&rt, Arc::new(AtomicI64::new(0))));
        s.run_once(&q, wall_u32).await.unwrap();
        rt.sleep_until(Timestamp::from_duration(Duration::from_secs(10)))
            .await;
        *store.before_commit.lock().unwrap() = Some(Box::new(move |inner| {
            // Another process's whole step, between this one's read and its commit.
            let read = inner.schedule_state("race").unwrap();
            let mut state = read.clone();
            state.cursor = wall(10);
            state.last_tick = Some(wall(10));
            let key = schedule.key(wall(10));
            let step = ScheduleCommit::new(Some(read.cursor), state)
                .push(10, Push::new().key(key.as_bytes()));
            inner.commit_schedule_now(step).unwrap();
        }));
        let step = s.run_once(&q, wall_u32).await.unwrap();
        assert_eq!(
            (step.pushed, step.duplicates, step.conflicts),
            (0, 0, 1),
            "refused once, then nothing left to push"
        );
        assert_eq!(s.cursor(), Some(wall(10)));
        assert_eq!(q.stats().ready, 1, "tick 10 once, by the other process");
    });
}

/// One scheduler runs an every-second schedule with a 2 s lead for 100 s (a consumer acks
/// each job when it is due), then every process stops: ticks 101 and 102 were pushed
/// ahead. A scheduler made at 107.5 s (a restart) resumes from the stored cursor. Per
/// policy: `Once` runs one late tick (107) and takes back 101 and 102 (dead letters,
/// `Expired`), no burst; `All { limit: 3 }` runs 105, 106 and 107; `All { limit: 100 }` runs
/// every tick, 101 to 107; `Skip` past its grace runs none late.
#[test]
fn a_restart_resumes_from_the_stored_cursor_and_catches_up_per_policy() {
    let all = |n: u32| CatchUp::All {
        limit: n.try_into().unwrap(),
    };
    let skip = CatchUp::Skip {
        grace: Duration::from_millis(200),
    };
    // (policy, late ticks ready at the restart, ticks taken back)
    let cases: [(CatchUp, Vec<u64>, Vec<u64>); 4] = [
        (CatchUp::Once, vec![107], vec![101, 102]),
        (all(3), vec![105, 106, 107], vec![101, 102]),
        (all(100), (101..=107).collect(), vec![]),
        (skip, vec![], vec![101, 102]),
    ];
    for (catch_up, late, taken_back) in cases {
        sim::run(|rt| async move {
            let q: LeaseQueue<Timestamp, SimRuntime> =
                LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(5))).unwrap();
            let schedule = Schedule::new("restart", every(1))
                .unwrap()
                .with_lead(Duration::from_secs(2))
                .with_catch_up(catch_up);
            let at = |ms: u64| Timestamp::from_duration(Duration::from_millis(ms));
            let mut s = Scheduler::new(schedule.clone())
                .with_clock(clock(&rt, Arc::new(AtomicI64::new(0))));
            let mut landed = Vec::new();
            for k in 0..=100 {
                rt.sleep_until(at(k * 1000)).await;
                let step = s.run_once(&q, |t| t).await.unwrap();
                assert_eq!(step.withdrawn, 0, "nothing is stale in steady running");
                while let Some(d) = q.try_receive() {
                    landed.push(*d.item());
                    d.ack().await.unwrap();
                }
            }
            assert_eq!(landed, (1..=100).map(wall).collect::<Vec<_>>());
            drop(s);
            // Everything down until 107.5 s; then a new scheduler.
            rt.sleep_until(at(107_500)).await;
            let mut restarted =
                Scheduler::new(schedule).with_clock(clock(&rt, Arc::new(AtomicI64::new(0))));
            let step = restarted.run_once(&q, |t| t).await.unwrap();
            assert_eq!(step.withdrawn, taken_back.len(), "{catch_up:?}");
            let mut ready = Vec::new();
            while let Some(d) = q.try_receive() {
                ready.push(*d.item());
                d.ack().await.unwrap();
            }
            assert_eq!(
                ready,
                late.iter().map(|&t| wall(t)).collect::<Vec<_>>(),
                "{catch_up:?}"
            );
            let dead: Vec<_> = q.dead_letters(Page::first(100)).await.unwrap();
            assert!(dead.iter().all(|d| d.reason == Reason::Expired));
            let dead: Vec<Timestamp> = dead.into_iter().map(|d| d.item.unwrap()).collect();
            let expected: Vec<Timestamp> = taken_back.iter().map(|&t| wall(t)).collect();
            assert_eq!(dead, expected, "{catch_up:?}");
            // The ticks after the restart come on time: 108 and 109 were pushed ahead.
            assert_eq!(q.stats().delayed, 2);
        });
    }
}

/// `All` with a bound after a long pause: the bound's latest ticks, oldest first, each due
/// at once.
#[test]
fn a_bounded_catch_up_pushes_the_latest_ticks() {
    sim::run(|rt| async move {
        let q: LeaseQueue<Timestamp, SimRuntime> =
            LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(5))).unwrap();
        let schedule = Schedule::new("hourly", every(3600))
            .unwrap()
            .with_catch_up(CatchUp::All {
                limit: 3.try_into().unwrap(),
            });
        // Resumed from a cursor saved 10 hours ago.
        let mut s = Scheduler::new(schedule)
            .with_clock(clock(&rt, Arc::new(AtomicI64::new(0))))
            .starting_at(wall(0).saturating_sub(Duration::from_secs(10 * 3600)));
        let step = s.run_once(&q, |t| t).await.unwrap();
        assert_eq!(step.pushed, 3);
        let mut got = Vec::new();
        for _ in 0..3 {
            let d = q.try_receive().unwrap();
            got.push(*d.item());
            d.ack().await.unwrap();
        }
        let h = |n: u64| wall(0).saturating_sub(Duration::from_secs(n * 3600));
        assert_eq!(got, [h(2), h(1), h(0)]);
    });
}

/// Store failures: three schedule commits made whose replies are lost ("outcome unknown"),
/// then three reads or commits not done. The scheduler tries again after `retry_after` and
/// reads what the store has: a commit made is not made again. Every tick lands once.
#[test]
fn store_failures_neither_lose_nor_repeat_a_tick() {
    sim::run(|rt| async move {
        let (q, store) = support::faulty::queue(&rt);
        store.faults.schedule_reply_lost.store(3, Ordering::Relaxed);
        let schedule = Schedule::new("sync", every(1))
            .unwrap()
            .with_lead(Duration::from_millis(500));
        let s = Scheduler::new(schedule)
            .with_clock(clock(&rt, Arc::new(AtomicI64::new(0))))
            .retry_after(Duration::from_millis(100));
        let tick_secs = |t: Timestamp| (t.as_nanos() / 1_000_000_000 - EPOCH) as u32;
        let scheduler = rt.spawn(Box::pin({
            let q = q.clone();
            async move { s.run(q, tick_secs).await.unwrap() }
        }));
        // At 10 s, three reads or commits not done.
        let later = rt.spawn(Box::pin({
            let (rt, store) = (rt.clone(), store.clone());
            async move {
                rt.sleep_until(Timestamp::from_duration(Duration::from_secs(10)))
                    .await;
                store.faults.schedule_not_done.store(3, Ordering::Relaxed);
            }
        }));
        let mut landed = Vec::new();
        while rt.now() < Timestamp::from_duration(Duration::from_secs(20)) {
            let d = q.receive().await.unwrap();
            landed.push(*d.item());
            d.ack().await.unwrap();
        }
        let _ = q.close();
        scheduler.await;
        later.await;
        // Every fault was met.
        assert_eq!(store.faults.schedule_reply_lost.load(Ordering::Relaxed), 0);
        assert_eq!(store.faults.schedule_not_done.load(Ordering::Relaxed), 0);
        assert_eq!(landed, (1..=20).collect::<Vec<u32>>());
    });
}
