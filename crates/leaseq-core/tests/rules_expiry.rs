//! One test per rule of the crate docs, at exact instants (virtual time, nanoseconds): expiry
//! and delays, the driver's `poll_timeout` and `handle_timeout`, dead letters, events.

use leaseq_core::{
    Acked, Backoff, Config, Event, EventMask, Failure, MessageId, Nacked, PushOptions, Reason,
    ReceiptError, RedriveError,
};

use leaseq_test_kit::core_queue::{config, events, leased, ok, queue};
use leaseq_test_kit::time::{ns, ts};

// ----- expiry and delays ----------------------------------------------------------------

#[test]
fn an_expired_item_is_never_delivered_again_and_is_a_dead_letter() {
    let mut q = queue(config().with_backoff(Backoff::Fixed(ns(20))));
    let id = q
        .push_with("a", ts(0), PushOptions::new().expires_at(ts(25)))
        .unwrap();
    let l = q.receive(ts(0)).unwrap();
    // Back off until 25: the item expires at the instant it would come back.
    assert_eq!(
        q.nack(l.receipt, ts(5), Failure::error("x")),
        Ok(Nacked::Retrying {
            visible_at: ts(25),
            attempts: 1
        })
    );
    assert_eq!(q.poll_timeout(), Some(ts(25)));
    assert!(q.receive(ts(24)).is_none());
    assert!(q.receive(ts(25)).is_none());
    let d = q.get_dead_letter(id).unwrap();
    assert_eq!(
        (
            d.reason,
            d.attempts,
            d.at,
            d.expires_at,
            d.last_error.as_deref()
        ),
        (Reason::Expired, 1, ts(25), Some(ts(25)), Some("x"))
    );
    let s = q.stats();
    assert_eq!((s.expired, s.dead_lettered, s.live()), (1, 1, 0));
    assert_eq!(q.redrive(id, ts(30)), Err(RedriveError::Expired(id)));
    ok(&q);
}

#[test]
fn a_lease_deadline_is_never_past_the_item_expiry() {
    let mut q = queue(Config::new(ns(100)).with_events(EventMask::ALL));
    let id = q
        .push_with("a", ts(0), PushOptions::new().expires_at(ts(30)))
        .unwrap();
    let l = q.receive(ts(5)).unwrap();
    assert_eq!(l.deadline, ts(30));
    assert_eq!(q.poll_timeout(), Some(ts(30)));
    // The lease ends with the item: expired, not retried.
    q.handle_timeout(ts(30));
    assert_eq!(q.get_dead_letter(id).unwrap().reason, Reason::Expired);
    assert_eq!(q.stats().lease_expired, 1);
    assert_eq!(
        q.ack(l.receipt, ts(31)),
        Err(ReceiptError::DeadLettered(id))
    );
    ok(&q);
}

#[test]
fn a_delayed_push_becomes_visible_after_its_delay() {
    let mut q = queue(config());
    let id = q.push_delayed("a", ts(5), ns(10)).unwrap();
    assert_eq!(q.stats().delayed, 1);
    assert_eq!(q.poll_timeout(), Some(ts(15)));
    assert!(q.receive(ts(14)).is_none());
    let l = q.receive(ts(15)).unwrap();
    assert_eq!((l.id, l.attempt, l.deadline), (id, 1, ts(25)));
    ok(&q);
}

#[test]
fn delivery_is_fifo_by_visibility_time_with_ties_in_push_order() {
    let mut q = queue(config().with_max_attempts(5));
    let a = q.push("a", ts(0)).unwrap();
    let b = q.push("b", ts(0)).unwrap();
    let c = q.push("c", ts(0)).unwrap();
    let order: Vec<_> = std::iter::from_fn(|| q.receive(ts(0)).map(|l| l.id)).collect();
    assert_eq!(order, [a, b, c]);

    // At 10: x's lease runs out (no backoff: visible at that instant), y's delay ends at 10,
    // z's delay ended at 7; w is pushed by the call at 10 itself.
    let mut q = queue(config());
    let x = q.push("x", ts(0)).unwrap();
    q.receive(ts(0)).unwrap();
    let y = q.push_delayed("y", ts(0), ns(10)).unwrap();
    let z = q.push_delayed("z", ts(2), ns(5)).unwrap();
    let w = q.push("w", ts(10)).unwrap();
    let order: Vec<_> = std::iter::from_fn(|| q.receive(ts(12)).map(|l| l.id)).collect();
    assert_eq!(order, [z, x, y, w]);

    // Same instant, pushed in the other order: push order wins.
    let mut q = queue(config());
    let late = q.push_delayed("late", ts(0), ns(10)).unwrap();
    let early = q.push_delayed("early", ts(5), ns(5)).unwrap();
    let order: Vec<MessageId> = std::iter::from_fn(|| q.receive(ts(10)).map(|l| l.id)).collect();
    assert_eq!(order, [late, early]);
    ok(&q);
}

// ----- the driver's side: poll_timeout and handle_timeout ---------------------------------

#[test]
fn poll_timeout_names_the_earliest_change() {
    let mut q = queue(config());
    assert_eq!(q.poll_timeout(), None);
    q.push("a", ts(0)).unwrap();
    assert_eq!(q.poll_timeout(), None, "ready items need no wake-up");
    let l = q.receive(ts(2)).unwrap();
    assert_eq!(q.poll_timeout(), Some(ts(12)));
    q.push_delayed("b", ts(3), ns(5)).unwrap();
    assert_eq!(q.poll_timeout(), Some(ts(8)));
    q.push_with("c", ts(3), PushOptions::new().expires_at(ts(6)))
        .unwrap();
    assert_eq!(q.poll_timeout(), Some(ts(6)));
    q.handle_timeout(ts(6));
    assert_eq!(q.poll_timeout(), Some(ts(8)));
    q.handle_timeout(ts(8));
    assert_eq!(q.poll_timeout(), Some(ts(12)));
    q.ack(l.receipt, ts(9)).unwrap();
    assert_eq!(q.poll_timeout(), None);
    ok(&q);
}

#[test]
fn handle_timeout_early_or_twice_does_nothing() {
    let mut q = queue(config());
    let id = q.push("a", ts(0)).unwrap();
    q.receive(ts(0)).unwrap();
    events(&mut q);
    let before = q.stats();
    q.handle_timeout(ts(9));
    assert_eq!(q.stats(), before);
    assert_eq!(q.poll_event(), None);
    assert_eq!(q.poll_timeout(), Some(ts(10)));

    q.handle_timeout(ts(10));
    let after = q.stats();
    assert_eq!((after.lease_expired, after.ready), (1, 1));
    assert_eq!(
        events(&mut q),
        [Event::LeaseExpired {
            id,
            attempt: 1,
            deadline: ts(10)
        }]
    );
    q.handle_timeout(ts(10));
    q.handle_timeout(ts(3)); // time going backwards: taken as 10
    assert_eq!(q.stats(), after);
    assert_eq!(q.poll_event(), None);
    assert_eq!(q.now(), ts(10));
    ok(&q);
}

// ----- dead letters ---------------------------------------------------------------------

#[test]
fn redrive_resets_attempts_and_keeps_the_id() {
    let mut q = queue(config().with_max_attempts(2));
    let id = q.push("a", ts(0)).unwrap();
    for t in [0, 10] {
        q.receive(ts(t)).unwrap();
    }
    q.handle_timeout(ts(20));
    let d = q.get_dead_letter(id).unwrap();
    assert_eq!((d.attempts, d.reason), (2, Reason::LeaseExpired));
    assert_eq!(q.redrive(id, ts(21)), Ok(id));
    assert!(q.get_dead_letter(id).is_none());
    let l = q.receive(ts(21)).unwrap();
    assert_eq!((l.id, l.attempt, l.item), (id, 1, "a"));
    let s = q.stats();
    assert_eq!((s.redriven, s.dead, s.pushed), (1, 0, 1));
    assert_eq!(q.ack(l.receipt, ts(22)), Ok(Acked::OnTime));
    ok(&q);
}

#[test]
fn take_dead_letter_hands_it_over_once() {
    let mut q = queue(config().with_max_attempts(1));
    let a = q.push("a", ts(0)).unwrap();
    let (b, la) = leased(&mut q, "b");
    let lb = q.receive(ts(0)).unwrap();
    q.dead_letter(la.receipt, ts(1), Some("poison".into()))
        .unwrap();
    q.nack(lb.receipt, ts(1), Failure::error("e")).unwrap();
    let d = q.take_dead_letter(a).unwrap();
    assert_eq!(
        (d.id, d.item, d.reason, d.last_error.as_deref()),
        (a, "a", Reason::Rejected, Some("poison"))
    );
    assert!(q.take_dead_letter(a).is_none());
    assert_eq!(q.redrive(a, ts(2)), Err(RedriveError::NotFound(a)));
    let s = q.stats();
    assert_eq!((s.dead, s.taken), (1, 1));
    let rest = q.take_dead_letters();
    assert_eq!(rest.len(), 1);
    assert_eq!((rest[0].id, rest[0].reason), (b, Reason::Nacked));
    assert_eq!(q.stats().taken, 2);
    assert!(q.dead_letters().next().is_none());
    ok(&q);
}

// ----- events ---------------------------------------------------------------------------

#[test]
fn events_are_bounded_and_the_oldest_dropped() {
    let mut q = queue(config().with_event_capacity(3));
    let ids: Vec<_> = (0..5).map(|_| q.push("x", ts(0)).unwrap()).collect();
    for _ in 0..5 {
        q.receive(ts(0)).unwrap();
    }
    assert_eq!(q.stats().events_dropped, 2);
    assert_eq!(
        events(&mut q),
        [
            Event::Delivered { id: ids[2] },
            Event::Delivered { id: ids[3] },
            Event::Delivered { id: ids[4] },
        ]
    );
    // The default mask leaves out Delivered.
    let mut q = queue(Config::new(ns(10)));
    q.push("x", ts(0)).unwrap();
    q.receive(ts(0)).unwrap();
    assert_eq!(q.poll_event(), None);
    ok(&q);
}
