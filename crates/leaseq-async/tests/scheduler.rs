//! The scheduler on virtual time: three processes with skewed wall clocks running one
//! schedule into one queue land each tick once; a wall clock that jumps forward catches up
//! by the policy, one that steps back reruns nothing; a refused push is tried again.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::core::schedule::{CatchUp, Interval, Schedule, Skipped};
use leaseq_async::{Config, LeaseQueue, PushError, Runtime, Scheduler, SimRuntime, Timestamp};

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
/// tick lands exactly once, in order, on time (within the skew).
#[test]
fn three_skewed_processes_land_each_tick_once() {
    let rt = SimRuntime::new();
    rt.block_on({
        let rt = rt.clone();
        async move {
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
            // The 70 ms-behind process saw tick 0 ahead (its start was before it).
            let expected: Vec<_> = (0..=100).map(wall).collect();
            assert_eq!(*landed.lock().unwrap(), expected);
        }
    });
}

/// One process, stepped by hand: a jump forward skips all but the latest tick (`Once`), a
/// second process's push of a live tick is a duplicate, a step back reruns nothing, and a
/// refused push keeps its tick due.
#[test]
fn run_once_catches_up_dedups_and_never_reruns() {
    let rt = SimRuntime::new();
    rt.block_on({
        let rt = rt.clone();
        async move {
            let q: LeaseQueue<Timestamp, SimRuntime> =
                LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(5))).unwrap();
            let offset = Arc::new(AtomicI64::new(0));
            let schedule = Schedule::new("ten", every(10)).unwrap();
            let mut s = Scheduler::new(schedule.clone()).with_clock(clock(&rt, offset.clone()));
            // Started at EPOCH (a tick itself, not after the cursor): nothing yet.
            let step = s.run_once(&q, |t| t).await.unwrap();
            assert_eq!((step.pushed, step.wake_at), (0, wall(10)));
            assert_eq!(s.cursor(), Some(wall(0)));

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

            // Another process with the same schedule, resuming from the same cursor: its
            // push of tick 90 is refused as a duplicate while the job is queued.
            let mut other = Scheduler::new(schedule)
                .with_clock(clock(&rt, offset.clone()))
                .starting_at(wall(80));
            let step = other.run_once(&q, |t| t).await.unwrap();
            assert_eq!((step.pushed, step.duplicates), (0, 1));
            assert_eq!(q.stats().ready, 1);

            // The clock steps back 50 s: nothing is due, tick 90 is not run again.
            offset.store(45_000, Ordering::Relaxed);
            let step = s.run_once(&q, |t| t).await.unwrap();
            assert_eq!(
                (step.pushed, step.duplicates, step.wake_at),
                (0, 0, wall(100))
            );
            assert_eq!(s.cursor(), Some(wall(90)));

            // Closed: the push of tick 120 is refused and stays due (ticks before it were
            // skipped by the policy and stay skipped).
            offset.store(125_000, Ordering::Relaxed);
            let _ = q.close();
            let err = s.run_once(&q, |t| t).await.unwrap_err();
            assert!(matches!(err, PushError::Closed(t) if t == wall(120)));
            assert_eq!(s.cursor(), Some(wall(110)));
        }
    });
}

/// `All` with a bound after a long pause: the bound's latest ticks, oldest first, each due
/// at once.
#[test]
fn a_bounded_catch_up_pushes_the_latest_ticks() {
    let rt = SimRuntime::new();
    rt.block_on({
        let rt = rt.clone();
        async move {
            let q: LeaseQueue<Timestamp, SimRuntime> =
                LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(5))).unwrap();
            let schedule =
                Schedule::new("hourly", every(3600))
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
        }
    });
}

/// A store that cannot confirm the first three pushes durable ("outcome unknown": the item
/// stays queued): the scheduler takes each as pushed and goes on; a second push of those
/// ticks, a second after (when their jobs are done and their keys free), would run them
/// twice. Every tick lands once.
#[test]
fn an_unconfirmed_push_is_not_pushed_again() {
    let rt = SimRuntime::new();
    rt.block_on({
        let rt = rt.clone();
        async move {
            let (q, store) = support::faulty::queue(&rt);
            store.faults.sync.store(3, Ordering::Relaxed);
            let schedule = Schedule::new("sync", every(1))
                .unwrap()
                .with_lead(Duration::from_millis(200));
            let s = Scheduler::new(schedule).with_clock(clock(&rt, Arc::new(AtomicI64::new(0))));
            let tick_secs = |t: Timestamp| (t.as_nanos() / 1_000_000_000 - EPOCH) as u32;
            let scheduler = rt.spawn(Box::pin({
                let q = q.clone();
                async move { s.run(q, tick_secs).await.unwrap() }
            }));
            let mut landed = Vec::new();
            while rt.now() < Timestamp::from_duration(Duration::from_secs(10)) {
                let d = q.receive().await.unwrap();
                landed.push(*d.item());
                d.ack().await.unwrap();
            }
            let _ = q.close();
            scheduler.await;
            assert_eq!(landed, (1..=10).collect::<Vec<u32>>());
        }
    });
}
