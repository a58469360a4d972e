//! Safe defaults and a pool's life: a heartbeat never keeps a lease forever, the watchdog is
//! on by default, a pool dropped without `shutdown` stops its workers, and a pool shuts
//! down on a signal with the items it handed back listed. Virtual time.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::channel::oneshot;
use leaseq_async::{Config, FindingKind, LeaseQueue, Pool, Reason, Runtime, DEFAULT_MAX_LEASE};
use leaseq_test_kit::sim::{self, sleep};

/// A hung handler whose heartbeat keeps its lease: by default the lease ends at
/// `DEFAULT_MAX_LEASE` (60 min), the item comes back (here: dead-lettered, one attempt),
/// `wait_empty` returns, the watchdog (on by default) reported the worker, and the
/// diagnosis names the hang under the heartbeat with its figures.
#[test]
fn a_heartbeat_never_keeps_a_lease_forever() {
    sim::run(|rt| async move {
        let config = Config::new(Duration::from_secs(30)).with_max_attempts(1);
        let q = LeaseQueue::with_runtime(rt.clone(), config).unwrap();
        q.try_push(1u32).unwrap();
        let start = rt.now();
        let pool = Pool::builder(q.clone())
            .workers(1)
            .heartbeat(true)
            .spawn(|_job| std::future::pending());
        q.wait_empty().await;
        assert_eq!(
            rt.now().saturating_duration_since(start),
            DEFAULT_MAX_LEASE,
            "the lease ends at the default max lease lifetime"
        );
        let dead = q.store().take_dead_letters();
        assert_eq!(dead.len(), 1);
        assert_eq!(dead[0].reason, Reason::LeaseExpired);
        let stuck = pool.stuck_workers();
        assert_eq!(stuck.len(), 1, "the default watchdog reported the worker");
        assert_eq!(stuck[0].silent_for, Duration::from_secs(61));
        let report = pool.shutdown(Duration::from_secs(1)).await;
        let hung = report
            .diagnosis
            .iter()
            .find(|f| f.kind == FindingKind::HungUnderHeartbeat)
            .expect("the diagnosis names the hang");
        assert!(hung.message.contains("extends"), "{hung}");
        assert!(report.stats.queue.extends > 100, "{:?}", report.stats.queue);
    });
}

/// A pool built with no settings at all runs a job three times as long as the visibility
/// once, and acks it: the heartbeat is on by default and keeps the lease, and the default
/// item timeout (the max lease) is far off.
#[test]
fn a_default_pool_runs_a_long_job_once() {
    sim::run(|rt| async move {
        let vis = Duration::from_secs(10);
        let q = LeaseQueue::with_runtime(rt.clone(), Config::new(vis)).unwrap();
        let runs = Arc::new(AtomicUsize::new(0));
        let start = rt.now();
        q.try_push(1u32).unwrap();
        let pool = Pool::builder(q.clone()).spawn({
            let (runs, rt) = (runs.clone(), rt.clone());
            move |job| {
                let (runs, rt) = (runs.clone(), rt.clone());
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    assert_eq!(job.attempt, 1);
                    assert_eq!(job.time_left(), DEFAULT_MAX_LEASE, "the default limit");
                    sleep(&rt, vis * 3).await;
                    assert!(!job.is_lease_lost());
                    Ok(())
                }
            }
        });
        q.wait_empty().await;
        assert_eq!(rt.now().saturating_duration_since(start), vis * 3);
        // Longer than any backoff would take to bring a lost item back.
        sleep(&rt, vis * 3).await;
        assert_eq!(runs.load(Ordering::SeqCst), 1, "run exactly once");
        let s = pool.stats();
        assert_eq!((s.ok, s.failed, s.timed_out), (1, 0, 0));
        assert_eq!((s.queue.acked, s.queue.lease_expired), (1, 0));
        assert!(
            s.queue.extends >= 8,
            "kept alive by the heartbeat: {:?}",
            s.queue
        );
        pool.shutdown(Duration::from_secs(1)).await;
    });
}

/// With the heartbeat turned off, the default item timeout is the visibility: a job that
/// takes longer is timed out when its lease ends, so its retry never runs beside it.
#[test]
fn without_heartbeat_the_default_timeout_is_the_visibility() {
    sim::run(|rt| async move {
        let vis = Duration::from_secs(10);
        let config = Config::new(vis).with_max_attempts(2);
        let q = LeaseQueue::with_runtime(rt.clone(), config).unwrap();
        let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        q.try_push(1u32).unwrap();
        let pool = Pool::builder(q.clone()).heartbeat(false).spawn({
            let (running, most, rt) = (running.clone(), most.clone(), rt.clone());
            move |job| {
                let (running, most, rt) = (running.clone(), most.clone(), rt.clone());
                async move {
                    assert_eq!(job.time_left(), vis);
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    // Dropped at the timeout: the count goes down with the future.
                    struct Done(Arc<AtomicUsize>);
                    impl Drop for Done {
                        fn drop(&mut self) {
                            self.0.fetch_sub(1, Ordering::SeqCst);
                        }
                    }
                    let _done = Done(running);
                    sleep(&rt, vis * 3).await;
                    Ok(())
                }
            }
        });
        q.wait_empty().await;
        assert_eq!(most.load(Ordering::SeqCst), 1, "never two runs at once");
        let s = pool.stats();
        assert_eq!((s.ok, s.timed_out), (0, 2));
        let dead = q.store().take_dead_letters();
        assert_eq!(dead.len(), 1);
        // The limit and the lease end at the same instant: the pool's timeout or the
        // driver's reaper settles the last attempt, whichever runs first.
        assert!(
            matches!(dead[0].reason, Reason::TimedOut | Reason::LeaseExpired),
            "{dead:?}"
        );
        pool.shutdown(Duration::from_secs(1)).await;
    });
}

/// A pool dropped without `shutdown` leaves no worker running: an item pushed afterwards is
/// not handled, and the item a worker held goes back to the queue, uncounted.
#[test]
fn a_dropped_pool_stops_its_workers() {
    sim::run(|rt| async move {
        let q = LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(10))).unwrap();
        let handled = Arc::new(AtomicUsize::new(0));
        let pool = Pool::builder(q.clone()).workers(2).spawn({
            let (handled, rt) = (handled.clone(), rt.clone());
            move |_job| {
                let (handled, rt) = (handled.clone(), rt.clone());
                async move {
                    sleep(&rt, Duration::from_secs(1)).await;
                    handled.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                }
            }
        });
        q.try_push(1u32).unwrap();
        sleep(&rt, Duration::from_millis(10)).await; // a worker holds it now
        assert_eq!(q.stats().in_flight, 1);
        drop(pool);
        sleep(&rt, Duration::from_millis(10)).await;
        let s = q.stats();
        // Back, its attempt not counted, visible at once.
        assert_eq!(
            (s.in_flight, s.ready, s.put_back, s.nacks),
            (0, 1, 1, 0),
            "the held item went back"
        );
        q.try_push(2).unwrap();
        sleep(&rt, Duration::from_secs(5)).await;
        assert_eq!(handled.load(Ordering::SeqCst), 0, "no worker runs on");
        assert_eq!(q.stats().ready, 2);
    });
}

/// `shutdown_on` waits for its signal; the report lists the items put back.
#[test]
fn shutdown_on_a_signal_lists_what_was_handed_back() {
    sim::run(|rt| async move {
        let q = LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(10))).unwrap();
        let ids: Vec<_> = (0..2u32).map(|n| q.try_push(n).unwrap()).collect();
        let pool = Pool::builder(q.clone())
            .workers(2)
            .spawn(|_job| std::future::pending());
        let (stop, signal) = oneshot::channel::<()>();
        let shutting = rt.spawn(Box::pin({
            let rt = rt.clone();
            async move {
                let report = pool
                    .shutdown_on(
                        async {
                            let _ = signal.await;
                        },
                        Duration::from_secs(1),
                    )
                    .await;
                assert_eq!(report.handed_back, 2);
                let mut back = report.handed_back_items.clone();
                back.sort();
                assert_eq!(back, ids);
                let mut back = report.put_back.clone();
                back.sort();
                assert_eq!(back, ids);
                assert_eq!(rt.now().as_duration(), Duration::from_secs(6));
            }
        }));
        sleep(&rt, Duration::from_secs(5)).await;
        assert_eq!(q.stats().in_flight, 2, "working until the signal");
        stop.send(()).unwrap();
        shutting.await;
        let s = q.stats();
        // Both back, their attempts not counted, visible at once.
        assert_eq!((s.in_flight, s.ready, s.put_back, s.nacks), (0, 2, 2, 0));
    });
}
