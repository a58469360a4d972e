//! Regression tests for the async layer's faults of issue 12, on virtual time.
//!
//! Each test states a fault that stranded an item or lost a worker, and fails on the code
//! before its fix. A would-be hang is bounded in virtual time (a `select` against a long
//! sleep), so a regression fails rather than hangs.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use leaseq_async::Push;
use leaseq_async::{Config, ItemTimeout, LeaseQueue, Pool, Runtime, SimRuntime};
use leaseq_test_kit::sim::{self, within};

/// No backoff: these tests time redeliveries to the lease's deadline.
fn queue(rt: &SimRuntime, visibility: Duration) -> LeaseQueue<u32, SimRuntime> {
    let config = Config::new(visibility).with_backoff(leaseq_async::Backoff::None);
    LeaseQueue::with_runtime(rt.clone(), config).unwrap()
}

/// Fault 1: a delivery of another queue given to `ack_batch` is refused and handed back
/// intact; neither queue's heartbeat registrations change.
#[test]
fn ack_batch_refuses_a_delivery_of_another_queue() {
    sim::run(|rt| async move {
        let q1 = queue(&rt, Duration::from_secs(1));
        let q2 = queue(&rt, Duration::from_secs(1));
        q1.try_push(1).unwrap();
        q2.try_push(2).unwrap();
        let d1 = q1.receive_with_heartbeat().await.unwrap();
        let d2 = q2.receive_with_heartbeat().await.unwrap();

        let report = q1.ack_batch(vec![d2]).await;
        assert_eq!(report.accepted(), 0);
        assert_eq!(
            report.foreign().len(),
            1,
            "the foreign delivery is handed back"
        );
        assert_eq!((q1.heartbeats(), q2.heartbeats()), (1, 1));

        // Both leases stay alive by heartbeat well past their visibility.
        sim::sleep(&rt, Duration::from_secs(5)).await;
        assert!(!d1.is_lease_lost());
        assert_eq!((q1.stats().in_flight, q2.stats().in_flight), (1, 1));

        // The refused delivery still settles on its own queue.
        let d2 = report.into_foreign().pop().unwrap();
        assert_eq!(*d2.item(), 2);
        d2.ack().await.unwrap();
        d1.ack().await.unwrap();
        let emptied = within(&rt, Duration::from_secs(60), async {
            q1.wait_empty().await;
            q2.wait_empty().await;
        });
        assert!(emptied.await.is_some(), "both queues empty");
        assert_eq!((q1.stats().acked, q2.stats().acked), (1, 1));
    });
}

/// Panics when dropped: a handler's guard, or an item.
struct PanicOnDrop;

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("guard dropped");
        }
    }
}

/// Fault 2: a panic while the pool drops a timed-out handler future must not cost a worker:
/// the pool keeps its workers, counts the time-outs, and handles every good item.
#[test]
fn panicking_drop_of_a_timed_out_handler_keeps_the_workers() {
    sim::run(|rt| async move {
        let q = queue(&rt, Duration::from_secs(10));
        for bad in [0, 1] {
            q.try_push(1000 + bad).unwrap();
        }
        for good in 0..10 {
            q.try_push(good).unwrap();
        }
        let handled = Arc::new(AtomicUsize::new(0));
        let pool = Pool::builder(q.clone())
            .workers(2)
            .item_timeout(ItemTimeout::Fixed(Duration::from_millis(20)))
            .spawn({
                let handled = handled.clone();
                move |job| {
                    let handled = handled.clone();
                    async move {
                        if job.item >= 1000 {
                            let _guard = PanicOnDrop;
                            std::future::pending::<()>().await;
                        }
                        handled.fetch_add(1, Ordering::Relaxed);
                        Ok(())
                    }
                }
            });
        let done = within(&rt, Duration::from_secs(60), async {
            while handled.load(Ordering::Relaxed) < 10 {
                sim::sleep(&rt, Duration::from_millis(5)).await;
            }
        })
        .await;
        assert!(done.is_some(), "the 10 good items were handled");
        assert_eq!(pool.live_workers(), 2);
        let report = pool.shutdown(Duration::from_secs(1)).await;
        assert!(report.stats.timed_out >= 2, "{:?}", report.stats);
        assert_eq!(report.stats.ok, 10);
        assert!(report.stuck.is_empty());
    });
}

/// An item each copy of which panics when dropped.
#[derive(Clone)]
struct Bomb(bool);

impl Drop for Bomb {
    fn drop(&mut self) {
        if self.0 && !std::thread::panicking() {
            panic!("item dropped");
        }
    }
}

/// Fault 2, second half: a panic in an item's own `Drop` (the handler's copy, or the
/// queue's copy after an ack) costs no worker: the run counts as panicked, the item goes
/// back and in the end to the dead letters, and every good item is handled.
#[test]
fn panicking_drop_of_an_item_keeps_the_workers() {
    sim::run(|rt| async move {
        let q: LeaseQueue<Bomb, SimRuntime> =
            LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(10))).unwrap();
        for i in 0..12 {
            q.try_push(Bomb(i < 2)).map_err(|_| ()).unwrap();
        }
        let pool = Pool::builder(q.clone())
            .workers(2)
            .spawn(|_job| async { Ok(()) });
        let emptied = within(&rt, Duration::from_secs(60), q.wait_empty()).await;
        assert!(emptied.is_some(), "every item acked");
        assert_eq!(pool.live_workers(), 2);
        let report = pool.shutdown(Duration::from_secs(1)).await;
        let s = &report.stats;
        assert_eq!((s.ok, s.queue.acked, s.queue.dead), (10, 10, 2), "{s:?}");
        assert_eq!(s.panicked, 10, "two bombs, five attempts each: {s:?}");
        for letter in q.store().take_dead_letters() {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(letter)));
        }
    });
}

/// Fault 3: shortening a lease by hand wakes the reaper for the nearer deadline.
#[test]
fn shortened_lease_comes_back_at_its_new_deadline() {
    sim::run(|rt| async move {
        let q = queue(&rt, Duration::from_secs(10));
        q.try_push(7).unwrap();
        let mut d = q.receive().await.unwrap();
        // Let the reaper settle on the 10 s deadline first.
        sim::sleep(&rt, Duration::from_millis(1)).await;
        let start = rt.now();
        d.extend(Duration::from_millis(10)).await.unwrap();
        let again = within(&rt, Duration::from_secs(60), q.receive()).await;
        let again = again.flatten().expect("redelivered");
        assert_eq!(
            rt.now().saturating_duration_since(start),
            Duration::from_millis(10)
        );
        assert_eq!(again.attempt(), 2);
        drop(d);
    });
}

/// Fault 3, with a heartbeat: a lease extended by hand far ahead, then shortened by its
/// heartbeat, comes back at the heartbeat's deadline once the heartbeat stops.
#[test]
fn lease_shortened_by_its_heartbeat_comes_back_on_time() {
    sim::run(|rt| async move {
        // Visibility 300 ms; the heartbeat extends by it every 100 ms.
        let q = queue(&rt, Duration::from_millis(300));
        q.try_push(7).unwrap();
        let mut d = q.receive_with_heartbeat().await.unwrap();
        d.extend(Duration::from_secs(3600)).await.unwrap();
        // The next beat (at +100 ms) sets the deadline to +400 ms; the reaper must learn.
        sim::sleep(&rt, Duration::from_millis(150)).await;
        d.stop_heartbeat();
        let start = rt.now();
        let again = within(&rt, Duration::from_secs(60), q.receive()).await;
        assert!(again.flatten().is_some(), "redelivered");
        assert_eq!(
            rt.now().saturating_duration_since(start),
            Duration::from_millis(250)
        );
        drop(d);
    });
}

/// Fault 4: a stream that outlives every queue handle still gets delayed items.
#[test]
fn stream_outliving_the_queue_gets_delayed_items() {
    sim::run(|rt| async move {
        let q = queue(&rt, Duration::from_secs(1));
        q.try_push_with(5, Push::new().delay(Duration::from_millis(50)))
            .unwrap();
        let mut stream = q.stream();
        drop(q);
        let start = rt.now();
        let got = within(&rt, Duration::from_secs(60), stream.next()).await;
        let d = got.flatten().expect("the delayed item");
        assert_eq!(*d.item(), 5);
        assert_eq!(
            rt.now().saturating_duration_since(start),
            Duration::from_millis(50)
        );
        d.ack().await.unwrap();
    });
}

#[test]
fn batch_of_zero_leases_nothing() {
    sim::run(|rt| async move {
        let q = queue(&rt, Duration::from_secs(1));
        q.try_push(1).unwrap();
        assert!(q.try_receive_batch(0).is_empty());
        assert!(q.receive_batch(0).await.is_empty());
        assert_eq!(q.stats().in_flight, 0);
        assert_eq!(q.stats().ready, 1);
    });
}

/// Minor: a queue's core events never pile up unseen: without `QueueBuilder::events` they
/// are not recorded (or, with the `tracing` feature, drained into `tracing` by the driver);
/// asked for, they are kept for `poll_event`.
#[test]
fn events_are_recorded_only_when_asked() {
    sim::run(|rt| async move {
        let config = Config::new(Duration::from_secs(1)).with_max_attempts(1);
        let quiet = LeaseQueue::with_runtime(rt.clone(), config.clone()).unwrap();
        let asked = LeaseQueue::<u32, SimRuntime>::builder(config)
            .runtime(rt.clone())
            .events(leaseq_async::EventMask::DEAD_LETTERED)
            .build()
            .unwrap();
        for q in [&quiet, &asked] {
            for i in 0..10u32 {
                q.try_push(i).unwrap();
                q.receive().await.unwrap().nack("failed").await.unwrap();
            }
            assert_eq!(q.stats().dead, 10);
        }
        // Let the driver run (with the `tracing` feature it drains the quiet queue's events).
        sim::sleep(&rt, Duration::from_millis(1)).await;
        assert_eq!(quiet.poll_event(), None);
        assert_eq!(quiet.stats().events_dropped, 0);
        let mut dead = 0;
        while let Some(e) = asked.poll_event() {
            assert!(
                matches!(e, leaseq_async::Event::DeadLettered { .. }),
                "{e:?}"
            );
            dead += 1;
        }
        assert_eq!(dead, 10);
    });
}

/// Minor: an item backing off "forever" (`Duration::MAX`) must not drive the virtual clock
/// to `Timestamp::MAX`, where every lease is born expired. With nothing else to wait for,
/// the simulation reports the deadlock instead.
#[test]
fn backoff_forever_does_not_drive_the_clock_to_the_end_of_time() {
    let rt = SimRuntime::new();
    // Without jitter, which would shorten "forever" to a mere 292 years.
    let config = Config::new(Duration::from_secs(1))
        .with_backoff(leaseq_async::Backoff::Fixed(Duration::MAX))
        .without_jitter();
    let q = rt.block_on({
        let rt = rt.clone();
        async move {
            let q = LeaseQueue::with_runtime(rt, config).unwrap();
            q.try_push(1u32).unwrap();
            q.receive().await.unwrap().nack("later").await.unwrap();
            q
        }
    });
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async { q.receive().await.map(|d| d.attempt()) })
    }));
    assert!(waited.is_err(), "nothing can come: {waited:?}");
    assert!(
        rt.now() < leaseq_async::Timestamp::from_duration(Duration::from_secs(1)),
        "{:?}",
        rt.now()
    );
    assert_eq!(q.stats().delayed, 1);
}
