//! A queue's metrics: equal to its stats, published by the driver within the interval,
//! same-named queues adding up, awaited pushes not counted as rejections.

use super::*;

/// Every queue metric, after a workload that moves every `Stats` field, equals the stats
/// read at the end: counters, dead letters by reason, late acks by kind, gauges.
#[test]
fn queue_metrics_equal_the_stats() {
    let recorder = Recorder::new();
    recorder.run(|rt, scraper| async move {
        let config = Config::new(SECOND)
            .with_max_attempts(2)
            .with_max_lease(2 * SECOND)
            .with_capacity(100)
            .with_event_capacity(1);
        // Events recorded (and never polled) into a buffer of one: some are dropped.
        let q = LeaseQueue::<u32, SimRuntime>::builder(config)
            .runtime(rt.clone())
            .name("admin")
            .events(leaseq_async::EventMask::ALL)
            .build()
            .unwrap();
        let expire = SECOND + SECOND / 10;
        // A lease runs out; the late ack is accepted (unclaimed).
        q.try_push(0).unwrap();
        let d = q.receive().await.unwrap();
        sleep(&rt, expire).await;
        d.ack().await.unwrap();
        // A lease runs out and is delivered again; the first holder's ack is stale.
        q.try_push(1).unwrap();
        let first = q.receive().await.unwrap();
        sleep(&rt, expire).await;
        let second = q.receive().await.unwrap();
        assert_eq!(second.attempt(), 2);
        assert!(first.ack().await.is_err());
        second.ack().await.unwrap();
        // A nack at the last attempt; a poison item.
        let nacked = q.try_push(2).unwrap();
        q.receive().await.unwrap().nack("again").await.unwrap();
        q.receive().await.unwrap().nack("boom").await.unwrap();
        q.try_push(3).unwrap();
        steps::dead_letter_next(&q, "poison").await;
        // An extend capped by the max lease, then a release.
        q.try_push(4).unwrap();
        let mut d = q.receive().await.unwrap();
        d.extend(10 * SECOND).await.unwrap();
        d.extend(Duration::ZERO).await.unwrap();
        // An item that expires unreceived, one born expired (refused), one delayed.
        q.push_with(5, Push::new().ttl(SECOND / 2)).await.unwrap();
        assert!(q.try_push_with(6, Push::new().ttl(Duration::ZERO)).is_err());
        q.push_with(7, Push::new().delay(60 * SECOND))
            .await
            .unwrap();
        sleep(&rt, SECOND).await;
        // A dead letter redriven; the released item held at the end; one more pushed.
        q.store().redrive(nacked).unwrap();
        let held = q.receive().await.unwrap();
        assert_eq!(held.item(), &4);
        q.try_push(8).unwrap();
        // Keys: a duplicate refused, a pending item replaced, one cancelled.
        let keyed = |key: &str| Push::new().key(key);
        q.try_push_with(9, keyed("k")).unwrap();
        assert!(q.try_push_with(10, keyed("k")).is_err());
        q.try_push_with(11, keyed("k").replace_pending()).unwrap();
        let doomed = q.try_push(12).unwrap();
        q.cancel(doomed).await.unwrap();
        let s = q.stats();
        assert!(s.events_dropped > 0);
        assert_eq!((s.lease_expired, s.expired, s.rejected), (2, 1, 2));
        assert_eq!((s.ready, s.delayed, s.in_flight, s.dead), (3, 1, 1, 2));
        assert_eq!((s.cancelled, s.replaced, s.duplicates), (2, 1, 1));
        assert_eq!((s.late_acks_unclaimed, s.late_acks_stale), (1, 1));
        assert_eq!((s.extends_capped, s.redriven, s.redelivered), (1, 1, 3));
        let dead_by = [
            (Reason::Expired, 1),
            (Reason::Nacked, 1),
            (Reason::Rejected, 1),
        ];
        scraper.scrape();
        scraper.assert_queue_matches("admin", &s, &dead_by);
        // Dropped at its last attempt: dead-lettered too. Then every dead letter taken.
        drop(held);
        let taken = q.store().take_dead_letters();
        assert_eq!(taken.len(), 3);
        let s = q.stats();
        scraper.scrape();
        let dead_by = [
            (Reason::Expired, 1),
            (Reason::Nacked, 1),
            (Reason::Rejected, 1),
            (Reason::Dropped, 1),
        ];
        scraper.assert_queue_matches("admin", &s, &dead_by);
        assert_eq!((s.taken, s.dead), (3, 0));
    });
}

/// Without any stats read, the driver publishes within `PUBLISH_EVERY`, plain pushes
/// (which skip the queue's lock) included; an idle queue wakes nobody.
#[test]
fn the_driver_publishes_within_the_interval() {
    let recorder = Recorder::new();
    recorder.run(|rt, scraper| async move {
        let q = named(&rt, "lag", Config::new(SECOND));
        for n in 0..5 {
            q.try_push(n).unwrap();
        }
        // The first change of the queue's life is published at once (the driver is woken).
        sleep(&rt, Duration::from_millis(1)).await;
        scraper.scrape();
        assert_eq!(scraper.counter(names::PUSHED, "lag", &[]), 5);
        assert_eq!(scraper.gauge(names::READY, "lag"), 5.0);
        // A change within `PUBLISH_EVERY` of that publication waits for its end.
        q.try_push(5).unwrap();
        sleep(&rt, PUBLISH_EVERY / 2).await;
        scraper.scrape();
        assert_eq!(scraper.counter(names::PUSHED, "lag", &[]), 5, "not yet");
        sleep(&rt, PUBLISH_EVERY / 2).await;
        scraper.scrape();
        assert_eq!(
            scraper.counter(names::PUSHED, "lag", &[]),
            6,
            "published by then"
        );
        assert_eq!(scraper.gauge(names::READY, "lag"), 6.0);
        // Receives and acks take the lock: published the same way.
        for _ in 0..6 {
            q.receive().await.unwrap().ack().await.unwrap();
        }
        sleep(&rt, PUBLISH_EVERY + Duration::from_millis(1)).await;
        scraper.scrape();
        assert_eq!(scraper.counter(names::ACKED, "lag", &[]), 6);
        assert_eq!(scraper.gauge(names::READY, "lag"), 0.0);
        // Nothing changes: nothing more is published.
        sleep(&rt, 3600 * SECOND).await;
        scraper.scrape();
        assert_eq!(scraper.counter(names::ACKED, "lag", &[]), 6);
        assert_eq!(scraper.gauge(names::READY, "lag"), 0.0);
    });
}

/// Queues of the same name add up, gauges included; a queue that goes away takes its share
/// off the gauges (its counters stay).
#[test]
fn same_named_queues_add_up_and_leave_their_gauges() {
    let recorder = Recorder::new();
    recorder.run(|rt, scraper| async move {
        let a = named(&rt, "shared", Config::new(SECOND));
        let b = named(&rt, "shared", Config::new(SECOND));
        a.try_push(1).unwrap();
        a.try_push(2).unwrap();
        b.try_push(3).unwrap();
        let _ = (a.stats(), b.stats());
        scraper.scrape();
        assert_eq!(scraper.counter(names::PUSHED, "shared", &[]), 3);
        assert_eq!(scraper.gauge(names::READY, "shared"), 3.0);
        b.try_push(4).unwrap();
        drop(a);
        // `a`'s driver ends and the queue goes: its two ready items leave the gauge, and
        // `b`'s unpublished push is published by its driver.
        sleep(&rt, PUBLISH_EVERY + Duration::from_millis(1)).await;
        scraper.scrape();
        assert_eq!(scraper.gauge(names::READY, "shared"), 2.0);
        assert_eq!(scraper.counter(names::PUSHED, "shared", &[]), 4);
    });
}

/// `leaseq_rejected_total` counts refusals returned to a caller: 50 awaited pushes into a
/// queue of capacity 1, drained concurrently, all wait for room and succeed (0 rejected);
/// then one `try_push` into the full queue is refused (1).
#[test]
fn awaited_pushes_waiting_for_room_publish_no_rejection() {
    let recorder = Recorder::new();
    recorder.run(|rt, scraper| async move {
        let q = named(&rt, "waits", Config::new(SECOND).with_capacity(1));
        let producer = rt.spawn(Box::pin({
            let q = q.clone();
            async move {
                for i in 0..50 {
                    q.push(i).await.unwrap();
                }
            }
        }));
        for _ in 0..50 {
            let d = q.receive().await.unwrap();
            sleep(&rt, Duration::from_millis(1)).await;
            d.ack().await.unwrap();
        }
        producer.await;
        q.try_push(50).unwrap();
        assert!(q.try_push(51).is_err());
        let s = q.stats();
        assert_eq!((s.pushed, s.acked, s.rejected), (51, 50, 1), "{s:?}");
        scraper.scrape();
        assert_eq!(scraper.counter(names::REJECTED, "waits", &[]), 1);
        assert_eq!(scraper.counter(names::PUSHED, "waits", &[]), 51);
    });
}
