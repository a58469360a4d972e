//! One test per rule of cancel and `cancel_leased` (crate docs: "Cancel"), at exact
//! instants (virtual time, nanoseconds).

use std::time::Duration;

use leaseq_core::{
    Acked, CancelError, Config, Event, EventMask, Failure, LateAckKind, MessageId, PushOptions,
    Queue, ReceiptError,
};

use leaseq_test_kit::core_queue::{config, drain, events, keyed, leased, ok, queue};
use leaseq_test_kit::time::{ns, ts};

// ----- cancel ---------------------------------------------------------------------------

#[test]
fn cancel_removes_a_ready_item_and_hands_it_back() {
    let mut q = queue(config());
    let a = q.push_with("a", ts(0), keyed("k").priority(2)).unwrap();
    q.push("b", ts(0)).unwrap();
    events(&mut q);
    assert_eq!(q.cancel(a, ts(1)), Ok("a"));
    assert_eq!(
        events(&mut q),
        [Event::Cancelled {
            id: a,
            in_flight: false
        }]
    );
    let s = q.stats();
    assert_eq!((s.cancelled, s.ready, s.pushed), (1, 1, 2));
    assert_eq!(q.ready_per_level(), [1, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(q.key_holder("k"), None, "the key is free at once");
    assert_eq!(drain(&mut q, ts(1)), ["b"]);
    assert_eq!(q.cancel(a, ts(1)), Err(CancelError::NotFound(a)), "twice");
    ok(&q);
}

#[test]
fn cancel_removes_a_delayed_item_and_its_timers() {
    let mut q = queue(config());
    let a = q
        .push_with(
            "a",
            ts(0),
            PushOptions::new().delay(ns(5)).expires_at(ts(8)),
        )
        .unwrap();
    assert_eq!(q.poll_timeout(), Some(ts(5)));
    assert_eq!(q.cancel(a, ts(4)), Ok("a"));
    assert_eq!(
        q.poll_timeout(),
        None,
        "neither the delay nor the expiry fires"
    );
    q.handle_timeout(ts(100));
    let s = q.stats();
    assert_eq!((s.delayed, s.cancelled, s.dead_lettered), (0, 1, 0));
    assert!(q.is_empty());
    ok(&q);
}

#[test]
fn cancel_of_an_item_in_flight_is_refused_and_the_lease_runs_on() {
    let mut q = queue(config());
    let (a, l) = leased(&mut q, "a");
    assert_eq!(q.cancel(a, ts(1)), Err(CancelError::InFlight(a)));
    assert!(!CancelError::InFlight(a).to_string().is_empty());
    assert_eq!(q.stats().cancelled, 0);
    assert_eq!(q.ack(l.receipt, ts(2)), Ok(Acked::OnTime));
    ok(&q);
}

#[test]
fn cancel_leased_ends_the_lease_and_its_receipt_is_cancelled() {
    let mut q = queue(config());
    let a = q.push_with("a", ts(0), keyed("k")).unwrap();
    let l = q.receive(ts(0)).unwrap();
    events(&mut q);
    assert_eq!(q.cancel_leased(a, ts(1)), Ok("a"));
    assert_eq!(
        events(&mut q),
        [Event::Cancelled {
            id: a,
            in_flight: true
        }]
    );
    assert_eq!(q.key_holder("k"), None);
    assert_eq!(q.ack(l.receipt, ts(2)), Err(ReceiptError::Cancelled(a)));
    assert_eq!(
        events(&mut q),
        [Event::LateAck {
            id: a,
            kind: LateAckKind::Cancelled,
            late_by: None
        }]
    );
    assert_eq!(
        q.nack(l.receipt, ts(2), Failure::error("e")),
        Err(ReceiptError::Cancelled(a))
    );
    assert_eq!(
        q.extend(l.receipt, ts(2), ns(5)),
        Err(ReceiptError::Cancelled(a))
    );
    assert_eq!(
        q.dead_letter(l.receipt, ts(2), None),
        Err(ReceiptError::Cancelled(a))
    );
    assert!(!ReceiptError::Cancelled(a).to_string().is_empty());
    // Nothing comes back at the old deadline.
    assert_eq!(q.poll_timeout(), None);
    q.handle_timeout(ts(10));
    let s = q.stats();
    assert_eq!(
        (s.in_flight, s.cancelled, s.lease_expired, s.late_acks_stale),
        (0, 1, 0, 1)
    );
    assert!(q.receive(ts(10)).is_none());
    ok(&q);
}

#[test]
fn cancel_leased_also_cancels_ready_and_delayed_items() {
    let mut q = queue(config());
    let a = q.push("a", ts(0)).unwrap();
    let b = q.push_delayed("b", ts(0), ns(5)).unwrap();
    assert_eq!(q.cancel_leased(a, ts(0)), Ok("a"));
    assert_eq!(q.cancel_leased(b, ts(0)), Ok("b"));
    assert!(q.is_empty());
    assert_eq!(
        events(&mut q),
        [
            Event::Cancelled {
                id: a,
                in_flight: false
            },
            Event::Cancelled {
                id: b,
                in_flight: false
            }
        ]
    );
    ok(&q);
}

#[test]
fn cancel_of_an_unknown_acked_or_dead_lettered_id_is_typed() {
    let mut q = queue(config().with_max_attempts(1));
    let (acked, l) = leased(&mut q, "a");
    q.ack(l.receipt, ts(0)).unwrap();
    let (dead, l) = leased(&mut q, "d");
    q.nack(l.receipt, ts(0), Failure::error("e")).unwrap();
    let never = MessageId::new(99);
    assert_eq!(q.cancel(acked, ts(1)), Err(CancelError::NotFound(acked)));
    assert_eq!(q.cancel(never, ts(1)), Err(CancelError::NotFound(never)));
    assert_eq!(q.cancel(dead, ts(1)), Err(CancelError::DeadLettered(dead)));
    assert_eq!(
        q.cancel_leased(dead, ts(1)),
        Err(CancelError::DeadLettered(dead))
    );
    for e in [
        CancelError::NotFound(never),
        CancelError::DeadLettered(dead),
    ] {
        assert!(!e.to_string().is_empty());
    }
    assert!(q.get_dead_letter(dead).is_some(), "the dead letter stays");
    assert_eq!(q.stats().cancelled, 0);
    ok(&q);
}

#[test]
fn cancel_applies_what_is_due_at_its_time_first() {
    let mut q = queue(config().with_max_attempts(2));
    let (a, l) = leased(&mut q, "a");
    // At 9 the lease runs; at 10 it has run out and the item is ready again.
    assert_eq!(q.cancel(a, ts(9)), Err(CancelError::InFlight(a)));
    assert_eq!(q.cancel(a, ts(10)), Ok("a"));
    // Its holder's late ack would have been accepted while unclaimed; now it is cancelled.
    assert_eq!(q.ack(l.receipt, ts(11)), Err(ReceiptError::Cancelled(a)));
    // An item whose expiry is due at the cancel's time is a dead letter by then.
    let e = q
        .push_with("e", ts(11), PushOptions::new().expires_at(ts(15)))
        .unwrap();
    assert_eq!(q.cancel(e, ts(15)), Err(CancelError::DeadLettered(e)));
    ok(&q);
}

#[test]
fn conservation_counts_cancelled_items() {
    let mut q = queue(config().with_events(EventMask::NONE));
    let ids: Vec<_> = (0..6).map(|_| q.push("x", ts(0)).unwrap()).collect();
    q.cancel(ids[0], ts(0)).unwrap();
    let l = q.receive(ts(0)).unwrap();
    q.cancel_leased(l.id, ts(0)).unwrap();
    q.push_with("k", ts(0), keyed("k")).unwrap();
    q.push_with("k2", ts(0), keyed("k").replace_pending())
        .unwrap();
    let s = q.stats();
    assert_eq!(s.pushed, 8);
    assert_eq!(
        s.pushed,
        s.acked + s.ready + s.delayed + s.in_flight + s.dead + s.taken + s.cancelled
    );
    assert_eq!((s.cancelled, s.replaced), (3, 1));
    assert!(s.check_conservation().is_ok());
    ok(&q);
}

#[test]
fn a_long_run_with_every_level_and_keys_keeps_the_indexes_bounded() {
    let mut q: Queue<u64> = Queue::new(Config::new(Duration::from_secs(1))).unwrap();
    let mut n = 0u64;
    for round in 0..50u64 {
        for _ in 0..100 {
            n += 1;
            let o = PushOptions::new()
                .priority((n % 8) as u8)
                .key(n.to_le_bytes());
            q.push_with(n, ts(round), o).unwrap();
        }
        // Cancel some, receive and ack the rest of the round.
        for id in (n - 100..n).step_by(7) {
            let _ = q.cancel(MessageId::new(id), ts(round));
        }
        while let Some(l) = q.receive(ts(round)) {
            q.ack(l.receipt, ts(round)).unwrap();
        }
        ok(&q);
    }
    assert!(q.is_empty());
    let sizes = q.index_sizes();
    assert!(sizes.ready <= 8 * 65, "{sizes:?}");
    assert!(sizes.keys <= 64, "the key table shrinks back: {sizes:?}");
}
