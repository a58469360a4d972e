//! The core's events through the driver: redeliveries, late acks, dead letters, capped
//! extensions, dropped events, events left to the caller.

use super::*;

/// A lease runs out (the driver's timer), the item is delivered again, and the first
/// holder's ack comes too late: refused as stale.
#[test]
fn lease_expiry_redelivery_and_a_stale_late_ack_are_traced() {
    let seen = traced(|rt, _| async move {
        let q = queue(&rt, "expiry", Config::new(SECOND));
        q.try_push(7).unwrap();
        let first = q.receive().await.unwrap();
        // Waits through the deadline: the driver expires the lease and it comes back.
        let second = q.receive().await.unwrap();
        assert_eq!(second.attempt(), 2);
        assert!(first.ack().await.is_err(), "stale");
        second.ack().await.unwrap();
        let_driver_run(&rt).await;
        let s = q.stats();
        assert_eq!(
            (s.lease_expired, s.redelivered, s.late_acks_stale),
            (1, 1, 1)
        );
    });
    let expired = seen.events("leaseq: lease expired");
    assert_eq!(expired.len(), 1, "{expired:?}");
    assert_eq!(expired[0].level, Level::INFO);
    assert_eq!(expired[0].fields["queue"], "expiry");
    assert_eq!(expired[0].fields["id"], "#0");
    assert_eq!(expired[0].fields["attempt"], "1");
    let redelivered = seen.events("leaseq: redelivered");
    assert_eq!(redelivered.len(), 1, "{redelivered:?}");
    assert_eq!(redelivered[0].fields["attempt"], "2");
    let stale = seen.events_with("leaseq: late ack", "kind", "redelivered");
    assert_eq!(stale.len(), 1, "{:?}", seen.events("leaseq: late ack"));
    assert_eq!(stale[0].fields["id"], "#0");
}

/// A late ack nobody else claimed is accepted, and traced. The ack comes after the driver
/// applied the deadline and went to sleep with nothing scheduled: only the lock guard,
/// seeing events wait, can wake it to drain them.
#[test]
fn an_unclaimed_late_ack_is_traced_though_the_driver_sleeps() {
    let seen = traced(|rt, seen| async move {
        let q = queue(&rt, "late", Config::new(SECOND));
        q.try_push(1).unwrap();
        let d = q.receive().await.unwrap();
        rt.sleep_until(d.deadline().saturating_add(Duration::from_millis(10)))
            .await;
        assert_eq!(seen.events("leaseq: lease expired").len(), 1);
        d.ack().await.unwrap();
        let_driver_run(&rt).await;
        assert_eq!(
            seen.events_with("leaseq: late ack", "kind", "unclaimed")
                .len(),
            1,
            "drained without a timer of the driver"
        );
        assert_eq!(q.stats().late_acks_unclaimed, 1);
    });
    let late = seen.events_with("leaseq: late ack", "kind", "unclaimed");
    assert_eq!(late[0].fields["late_by"], "Some(10ms)");
    assert_eq!(late[0].fields["queue"], "late");
}

/// The same when the driver never ran in between: the clock moved on its own, and the ack
/// itself applied the deadline (two events from one operation).
#[test]
fn an_ack_that_applies_the_deadline_itself_is_traced() {
    let seen = traced(|rt, _| async move {
        let q = queue(&rt, "starved", Config::new(SECOND));
        q.try_push(1).unwrap();
        let d = q.receive().await.unwrap();
        rt.advance(SECOND + Duration::from_millis(10));
        d.ack().await.unwrap();
        let_driver_run(&rt).await;
    });
    assert_eq!(seen.events("leaseq: lease expired").len(), 1);
    let late = seen.events_with("leaseq: late ack", "kind", "unclaimed");
    assert_eq!(late.len(), 1, "{:?}", seen.events("leaseq: late ack"));
    assert_eq!(late[0].fields["late_by"], "Some(10ms)");
}

/// Dead letters of every origin: a nack at the last attempt, a holder's `dead_letter`,
/// a lease running out at the last attempt, an item's own expiry.
#[test]
fn every_kind_of_dead_letter_is_traced() {
    let seen = traced(|rt, seen| async move {
        let q = queue(&rt, "dead", Config::new(SECOND).with_max_attempts(1));
        q.try_push(1).unwrap();
        q.try_push(2).unwrap();
        q.try_push(3).unwrap();
        q.push_with(
            4,
            Push::new()
                .delay(Duration::from_secs(60))
                .ttl(Duration::from_secs(30)),
        )
        .await
        .unwrap();
        let (first, second) = (q.receive().await.unwrap(), q.receive().await.unwrap());
        let_driver_run(&rt).await;
        first.nack("boom").await.unwrap();
        second.dead_letter("poison").await.unwrap();
        // The driver's alarm is a lease deadline a second away: the lock guard woke it.
        let_driver_run(&rt).await;
        assert_eq!(seen.events("leaseq: dead-lettered").len(), 2);
        // The third runs out at its only attempt; the fourth expires while delayed.
        let _held = q.receive().await.unwrap();
        sim::sleep(&rt, Duration::from_secs(40)).await;
        let s = q.stats();
        assert_eq!((s.dead_lettered, s.expired), (4, 1));
    });
    let dead = seen.events("leaseq: dead-lettered");
    let reasons: Vec<&str> = dead.iter().map(|e| e.fields["reason"].as_str()).collect();
    assert_eq!(
        reasons,
        ["nacked", "rejected", "lease expired", "expired"],
        "{dead:?}"
    );
    assert!(dead.iter().all(|e| e.level == Level::WARN));
    assert_eq!(dead[0].fields["id"], "#0");
    assert_eq!(dead[3].fields["id"], "#3");
    // The nack itself reports the hand-back (at debug), without a second dead-letter line.
    let handed = seen.events("leaseq: item handed back");
    assert_eq!(handed.len(), 1, "{handed:?}");
    assert_eq!(handed[0].fields["dead_lettered"], "true");
}

/// An extend past the max lease lifetime is cut short, and traced.
#[test]
fn a_capped_extension_is_traced() {
    let seen = traced(|rt, _| async move {
        let config = Config::new(SECOND).with_max_lease(Duration::from_secs(2));
        let q = queue(&rt, "capped", config);
        q.try_push(1).unwrap();
        let mut d = q.receive().await.unwrap();
        let extended = d.extend(Duration::from_secs(5)).await.unwrap();
        assert!(
            matches!(extended, Extended::Until { capped: true, .. }),
            "{extended:?}"
        );
        d.ack().await.unwrap();
        let_driver_run(&rt).await;
        assert_eq!(q.stats().extends_capped, 1);
    });
    let capped = seen.events("leaseq: extension capped");
    assert_eq!(capped.len(), 1);
    assert_eq!(capped[0].fields["deadline"], "2s");
}

/// More events at once than the buffer holds: the oldest are dropped, and the driver warns
/// with how many.
#[test]
fn dropped_events_are_reported() {
    let seen = traced(|rt, _| async move {
        let config = Config::new(SECOND)
            .with_max_attempts(1)
            .with_event_capacity(2);
        let q = queue(&rt, "overflow", config);
        for n in 0..5 {
            q.try_push(n).unwrap();
        }
        // Five dead letters with no await in between: the driver cannot run.
        for d in q.try_receive_batch(5) {
            d.nack("no").await.unwrap();
        }
        let_driver_run(&rt).await;
        assert_eq!(q.stats().events_dropped, 3);
        // No more drops: no second warning.
        q.try_push(9).unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        let_driver_run(&rt).await;
    });
    let dropped = seen.events("leaseq: events dropped (the event buffer was full)");
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert_eq!(dropped[0].level, Level::WARN);
    assert_eq!(dropped[0].fields["dropped"], "3");
    assert_eq!(dropped[0].fields["total"], "3");
    assert_eq!(dropped[0].fields["capacity"], "2");
    assert_eq!(dropped[0].fields["queue"], "overflow");
    // The two kept are still traced.
    let kept = seen.events("leaseq: dead-lettered");
    let ids: Vec<&str> = kept.iter().map(|e| e.fields["id"].as_str()).collect();
    assert_eq!(ids, ["#3", "#4"]);
}

/// A queue whose events were asked for with `QueueBuilder::events` keeps them for
/// `poll_event`: the driver does not take them, but it still reports drops.
#[test]
fn events_asked_for_are_left_to_the_caller() {
    let seen = traced(|rt, _| async move {
        let config = Config::new(SECOND)
            .with_max_attempts(1)
            .with_event_capacity(1);
        let q = LeaseQueue::<u32, SimRuntime>::builder(config)
            .runtime(rt.clone())
            .events(leaseq_async::EventMask::DEAD_LETTERED)
            .build()
            .unwrap();
        q.try_push(1u32).unwrap();
        q.try_push(2u32).unwrap();
        for d in q.try_receive_batch(2) {
            d.nack("no").await.unwrap();
        }
        // Drops are noticed when the driver next runs (here: woken for the new lease).
        q.try_push(3u32).unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        let_driver_run(&rt).await;
        // The newest event was kept, the older one dropped.
        match q.poll_event() {
            Some(leaseq_async::Event::DeadLettered { id, .. }) => assert_eq!(id.get(), 1),
            other => panic!("{other:?}"),
        }
        assert_eq!(q.stats().events_dropped, 1);
    });
    assert!(seen.events("leaseq: dead-lettered").is_empty());
    let dropped = seen.events("leaseq: events dropped (the event buffer was full)");
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert_eq!(dropped[0].fields["queue"], "leaseq", "the default name");
}
