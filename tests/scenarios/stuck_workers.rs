//! The stuck-worker scenarios: blocking handlers that overrun their timeout, the watchdog.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leaseq_async::{
    Backoff, Config, FindingKind, ItemTimeout, Job, Pool, Reason, Runtime, Watchdog,
};

use super::env::*;

// ----- 7. blocking handler ------------------------------------------------------------------

/// A blocking handler (on the runtime's blocking threads) that sleeps past its item timeout
/// until the test opens a gate: the item is handed back at each time-out while the thread
/// runs on; each such thread is counted as an overrun; with the bound of 2 reached, the
/// third attempt waits (and times out) without starting a thread; `blocking_overruns_running`
/// returns to 0 once the threads end.
///
/// Not run on tokio's paused clock: it does not auto-advance while `spawn_blocking` work
/// runs, so the item timeout would never fire there.
pub(crate) async fn blocking_handler_overruns_are_counted<R: Runtime, K: StoreKind<R>>(
    env: Env<R, K>,
) {
    let u = env.u;
    // No backoff: the attempts are timed to the time-outs themselves.
    let config = Config::new(50 * u)
        .with_max_attempts(3)
        .with_backoff(Backoff::None);
    let q = env.queue::<u32>(config);
    let id = q.try_push(0).unwrap();
    let gate = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicU32::new(0));
    let start = env.now();
    let pool = Pool::builder(q.clone())
        .workers(2)
        .item_timeout(ItemTimeout::Fixed(u))
        .max_blocking_overruns(2)
        .spawn_blocking({
            let (gate, calls) = (gate.clone(), calls.clone());
            move |job: &Job<u32>| {
                // Blocking handlers get the same context as async ones (item 0 is the
                // first two calls: attempts 1 and 2).
                let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
                assert!(job.time_left() <= u);
                if job.item == 0 {
                    assert_eq!(job.attempt, call);
                    let give_up = Instant::now() + Duration::from_secs(20);
                    while !gate.load(Ordering::SeqCst) && Instant::now() < give_up {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                Ok(())
            }
        });
    env.within(env.patience(), "the queue to empty", q.wait_empty())
        .await;
    // Attempts 1 and 2 each ran a thread that outlived its time-out; attempt 3 found the bound
    // reached and timed out waiting; then the item was dead-lettered, each step at once.
    env.exactly(env.now(), start.saturating_add(3 * u), "empty at");
    let s = pool.stats();
    assert_eq!((s.timed_out, s.ok), (3, 0), "{s:#?}");
    assert_eq!(s.blocking_overruns, 2);
    assert_eq!(s.blocking_overruns_running, 2, "the gate is still closed");
    let qs = s.queue;
    assert_eq!(
        (qs.lease_expired, qs.nacks, qs.redelivered),
        (0, 3, 2),
        "{qs:#?}"
    );
    let dead = dead_letters(&q);
    assert_eq!(dead.len(), 1);
    assert_eq!(
        (dead[0].id, dead[0].reason, dead[0].attempts),
        (id, Reason::TimedOut, 3)
    );
    assert_eq!(
        dead[0].last_error.as_deref(),
        Some(format!("timed out after {u:?}").as_str())
    );

    // Let the threads end: the running count goes back to zero, the total stays.
    gate.store(true, Ordering::SeqCst);
    block_until("the blocking threads to end", || {
        pool.stats().blocking_overruns_running == 0
    });
    assert_eq!(pool.stats().blocking_overruns, 2);
    // (Counted only now: on virtual time the clock may run ahead of the threads' start.)
    assert_eq!(calls.load(Ordering::SeqCst), 2, "two threads started");

    // With the overruns over, the workers start blocking work again. (Only on real time:
    // SimRuntime's clock does not wait for blocking threads, so there a short blocking run
    // races its own timers.)
    if !env.virtual_time {
        let quick = q.try_push(1).unwrap();
        env.within(env.patience(), "the queue to empty", q.wait_empty())
            .await;
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert!(dead_letters(&q).iter().all(|d| d.id != quick));
        let s = pool.stats();
        assert_eq!((s.ok, s.blocking_overruns), (1, 2), "{s:#?}");
    }

    let report = pool.shutdown(u).await;
    assert_eq!(report.handed_back, 0);
    assert_eq!(report.stats.blocking_overruns, 2);
    assert_eq!(report.stats.blocking_overruns_running, 0);
    assert!(kinds(&report.diagnosis).contains(&FindingKind::BlockingOverruns));
    assert_conserved(&q);
}

// ----- 8. watchdog --------------------------------------------------------------------------

/// A handler that pends forever with no item timeout: the watchdog reports the worker once,
/// within one interval after the limit (never before), with its index, how long it was
/// silent and the item it holds (id, type, since); the report shows in `stuck_workers()` and
/// in the shutdown report, and shutdown hands the item back.
pub(crate) async fn watchdog_reports_stuck_worker<R: Runtime, K: StoreKind<R>>(env: Env<R, K>) {
    let u = env.u;
    let (interval, limit) = (u, 3 * u);
    // No backoff (the stuck item, put back at shutdown, is ready at once anyway).
    let q = env.queue::<u32>(Config::new(50 * u).with_backoff(Backoff::None));
    let stuck_id = q.try_push(0).unwrap();
    for n in 1..=5 {
        q.try_push(n).unwrap();
    }
    let handler_start = Arc::new(Mutex::new(None));
    let start = env.now();
    let pool = Pool::builder(q.clone())
        .workers(2)
        .watchdog(Watchdog::new(interval, limit))
        .item_type(|n: &u32| if *n == 0 { "stuck" } else { "quick" })
        .spawn({
            let (handler_start, rt) = (handler_start.clone(), env.rt.clone());
            move |job: Job<u32>| {
                let stuck = job.item == 0;
                if stuck {
                    *handler_start.lock().unwrap() = Some(rt.now());
                }
                let pause = sleep(&rt, u / 10);
                async move {
                    if stuck {
                        std::future::pending::<()>().await;
                    }
                    pause.await;
                    Ok(())
                }
            }
        });
    env.until(env.patience(), "a stuck-worker report", || {
        !pool.stuck_workers().is_empty()
    })
    .await;
    let reports = pool.stuck_workers();
    assert_eq!(reports.len(), 1, "{reports:?}");
    let r = reports[0];
    assert!(r.worker < 2, "{r:?}");
    assert_eq!(r.holding.id, stuck_id);
    assert_eq!(r.holding.item_type, "stuck");
    assert!(r.silent_for > limit, "reported early: {r:?}");
    assert_eq!(r.at, r.holding.since.saturating_add(r.silent_for));
    let handler_start = handler_start.lock().unwrap().expect("handler ran");
    assert!(r.holding.since <= handler_start);
    if env.virtual_time {
        // The watchdog looks at start + k * interval: the first look past the limit is at 4u.
        assert_eq!(r.holding.since, start);
        assert_eq!(handler_start, start);
        assert!(r.silent_for <= limit + interval, "{r:?}");
        assert_eq!(r.at, start.saturating_add(limit + interval));
    }
    // Once per item, not at every look.
    sleep(&env.rt, 3 * interval).await;
    assert_eq!(pool.stuck_workers(), reports);
    assert_eq!(pool.stats().stuck_reports, 1);
    env.until(env.patience(), "the quick items", || q.stats().acked == 5)
        .await;

    let report = pool.shutdown(u).await;
    assert_eq!(report.handed_back, 1, "the stuck worker was stopped");
    assert_eq!(report.put_back, vec![stuck_id]);
    assert_eq!(report.stuck, reports);
    assert_eq!(report.stats.stuck_reports, 1);
    assert!(kinds(&report.diagnosis).contains(&FindingKind::StuckWorkers));
    // The stuck item went back to the queue, uncounted.
    let s = env
        .stats_once(&q, "the stuck item back", |s| {
            s.in_flight == 0 && s.ready == 1
        })
        .await;
    assert_eq!(
        (s.in_flight, s.ready, s.acked, s.nacks),
        (0, 1, 5, 0),
        "{s:#?}"
    );
    assert_conserved(&q);
}
