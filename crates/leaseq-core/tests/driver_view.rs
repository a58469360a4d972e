//! What a driver and an admin tool read without changing anything: `next_timeout_bound`
//! (the cheap alarm check after each operation) and `items` (the live items).

use std::time::Duration;

use leaseq_core::{Backoff, Failure, ItemState, PushOptions, Queue, Timestamp};
use proptest::prelude::*;

use leaseq_test_kit::core_queue::config;
use leaseq_test_kit::time::ts;

/// Every operation that schedules a timer lowers the bound to it at once, so a driver that
/// compares the bound with its alarm after each operation never sleeps past a deadline.
#[test]
fn each_new_timer_lowers_the_bound_at_once() {
    let mut q = Queue::new(config().with_backoff(Backoff::Fixed(Duration::from_nanos(3)))).unwrap();
    assert_eq!(q.next_timeout_bound(), Timestamp::MAX);

    q.push("a", ts(0)).unwrap();
    assert_eq!(
        q.next_timeout_bound(),
        Timestamp::MAX,
        "a plain push schedules nothing"
    );
    let l = q.receive(ts(0)).unwrap();
    assert_eq!(q.next_timeout_bound(), ts(10), "a lease");

    q.push_with(
        "b",
        ts(1),
        PushOptions::new().delay(Duration::from_nanos(4)),
    )
    .unwrap();
    assert_eq!(q.next_timeout_bound(), ts(5), "a delay");

    q.push_with("c", ts(1), PushOptions::new().expires_at(ts(3)))
        .unwrap();
    assert_eq!(q.next_timeout_bound(), ts(3), "an expiry");

    let mut q2 = Queue::new(config()).unwrap();
    q2.push("x", ts(0)).unwrap();
    let l2 = q2.receive(ts(0)).unwrap();
    q2.extend(l2.receipt, ts(1), Duration::from_nanos(100))
        .unwrap();
    assert_eq!(q2.poll_timeout(), Some(ts(101)));
    q2.extend(l2.receipt, ts(2), Duration::from_nanos(2))
        .unwrap();
    assert_eq!(
        q2.next_timeout_bound(),
        ts(4),
        "a lease shortened by extend"
    );

    q.nack(l.receipt, ts(2), Failure::error("e")).unwrap();
    assert!(
        q.next_timeout_bound() <= ts(5),
        "a backoff (to 5) keeps the bound at or below it"
    );
    assert_eq!(q.poll_timeout(), Some(ts(3)));
}

/// `items` shows each live item where it is, with its attempts, lease deadline and expiry.
#[test]
fn items_show_every_live_item() {
    let mut q = Queue::new(config()).unwrap();
    let a = q.push("a", ts(0)).unwrap();
    let b = q
        .push_with(
            "b",
            ts(0),
            PushOptions::new()
                .delay(Duration::from_nanos(50))
                .expires_at(ts(500)),
        )
        .unwrap();
    let c = q.push("c", ts(0)).unwrap();
    let l = q.receive(ts(1)).unwrap();
    assert_eq!(l.id, a);
    let got: Vec<_> = q
        .items()
        .map(|v| (v.id, v.state, v.attempts, v.expires_at))
        .collect();
    assert_eq!(
        got,
        [
            (a, ItemState::InFlight { deadline: ts(11) }, 1, None),
            (b, ItemState::Delayed, 0, Some(ts(500))),
            (c, ItemState::Ready, 0, None),
        ]
    );
    q.ack(l.receipt, ts(2)).unwrap();
    q.handle_timeout(ts(60));
    let ids: Vec<_> = q.items().map(|v| (v.id, v.state)).collect();
    assert_eq!(ids, [(b, ItemState::Ready), (c, ItemState::Ready)]);
}

#[derive(Clone, Debug)]
enum Op {
    Push(u64),
    Receive,
    Ack(usize),
    Nack(usize),
    Extend(usize, u64),
    Wait(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u64..30).prop_map(Op::Push),
        Just(Op::Receive),
        (0usize..8).prop_map(Op::Ack),
        (0usize..8).prop_map(Op::Nack),
        ((0usize..8), (1u64..40)).prop_map(|(i, d)| Op::Extend(i, d)),
        (0u64..15).prop_map(Op::Wait),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// After any operation the bound is never later than the exact next timeout, and the
    /// live items `items` lists agree with the gauges.
    #[test]
    fn bound_is_never_late_and_items_match_the_gauges(ops in prop::collection::vec(op(), 1..60)) {
        let mut q = Queue::new(config().with_backoff(Backoff::Fixed(Duration::from_nanos(7))))
            .unwrap();
        let mut now = 0u64;
        let mut leases = Vec::new();
        for op in ops {
            match op {
                Op::Push(delay) => {
                    let _ = q.push_with(0u8, ts(now), PushOptions::new().delay(Duration::from_nanos(delay)));
                }
                Op::Receive => leases.extend(q.receive(ts(now))),
                Op::Ack(i) if i < leases.len() => {
                    let _ = q.ack(leases.swap_remove(i).receipt, ts(now));
                }
                Op::Nack(i) if i < leases.len() => {
                    let _ = q.nack(leases.swap_remove(i).receipt, ts(now), Failure::error("e"));
                }
                Op::Extend(i, d) if i < leases.len() => {
                    let _ = q.extend(leases[i].receipt, ts(now), Duration::from_nanos(d));
                }
                Op::Wait(d) => now += d,
                _ => {}
            }
            let bound = q.next_timeout_bound();
            let exact = q.poll_timeout().unwrap_or(Timestamp::MAX);
            prop_assert!(bound <= exact, "bound {bound:?} later than the next timeout {exact:?}");
            let s = q.stats();
            let (mut ready, mut delayed, mut in_flight) = (0, 0, 0);
            for v in q.items() {
                match v.state {
                    ItemState::Ready => ready += 1,
                    ItemState::Delayed => delayed += 1,
                    ItemState::InFlight { .. } => in_flight += 1,
                }
            }
            prop_assert_eq!((ready, delayed, in_flight), (s.ready, s.delayed, s.in_flight));
        }
    }
}

/// `push_with_id`: ids chosen by the driver must increase; a lower one is refused with the
/// item handed back; ids skipped are never used, and plain pushes carry on after them.
#[test]
fn push_with_id_takes_increasing_ids_only() {
    use leaseq_core::{MessageId, PushError};
    let mut q = Queue::new(config()).unwrap();
    assert_eq!(q.next_id(), MessageId::new(0));
    let a = q
        .push_with_id(MessageId::new(3), "a", ts(0), PushOptions::new())
        .unwrap();
    assert_eq!(a, MessageId::new(3));
    assert_eq!(q.next_id(), MessageId::new(4));
    match q.push_with_id(MessageId::new(2), "b", ts(0), PushOptions::new()) {
        Err(PushError::IdOutOfOrder(item)) => assert_eq!(item, "b"),
        other => panic!("{other:?}"),
    }
    assert_eq!(q.push("c", ts(0)), Ok(MessageId::new(4)));
    // A refused push (already expired) does not use its id.
    let expired = PushOptions::new().expires_at(ts(0));
    assert!(q
        .push_with_id(MessageId::new(9), "d", ts(1), expired)
        .is_err());
    assert_eq!(q.next_id(), MessageId::new(5));
    assert_eq!(q.stats().rejected, 2);
    assert_eq!(q.receive(ts(1)).map(|l| l.id), Some(a));
}

/// `push_with_id` with plain options (its fast path, `push`'s steps) refuses as the general
/// path does: a full queue hands the item back, counts the refusal unless the caller waits
/// for room, and leaves the id unused; with room again the same id is taken.
#[test]
fn a_plain_push_with_id_refused_as_full_does_not_use_up_the_id() {
    use leaseq_core::{MessageId, PushError};
    let mut q = Queue::new(config().with_capacity(1)).unwrap();
    let first = q
        .push_with_id(MessageId::new(2), "a", ts(0), PushOptions::new())
        .unwrap();
    match q.push_with_id(MessageId::new(7), "b", ts(0), PushOptions::new()) {
        Err(PushError::Full(item)) => assert_eq!(item, "b"),
        other => panic!("{other:?}"),
    }
    let waits = PushOptions::new().waits_for_room();
    match q.push_with_id(MessageId::new(8), "c", ts(0), waits) {
        Err(PushError::Full(item)) => assert_eq!(item, "c"),
        other => panic!("{other:?}"),
    }
    assert_eq!(q.next_id(), MessageId::new(3));
    assert_eq!(q.stats().rejected, 1);
    let lease = q.receive(ts(0)).unwrap();
    assert_eq!(lease.id, first);
    q.ack(lease.receipt, ts(0)).unwrap();
    assert_eq!(
        q.push_with_id(MessageId::new(7), "b", ts(1), PushOptions::new()),
        Ok(MessageId::new(7))
    );
    assert_eq!(q.next_id(), MessageId::new(8));
    q.stats().check_conservation().unwrap();
    q.check_invariants().unwrap();
}

/// `check_lease` says whether a lease still runs, with the reason a settle would get, and
/// changes nothing: the lease settles as before.
#[test]
fn check_lease_answers_as_a_settle_would_and_changes_nothing() {
    use leaseq_core::ReceiptError;
    let mut q = Queue::new(config()).unwrap();
    q.push("a", ts(0)).unwrap();
    let l = q.receive(ts(0)).unwrap();
    assert_eq!(q.check_lease(l.receipt, ts(1)), Ok(()));
    assert_eq!(
        q.check_lease(l.receipt, ts(2)),
        Ok(()),
        "asking twice is fine"
    );
    // The lease runs out at 10: refused as an extend would be.
    assert_eq!(
        q.check_lease(l.receipt, ts(10)),
        Err(ReceiptError::LeaseExpired(l.id))
    );
    let again = q.receive(ts(10)).unwrap();
    assert_eq!(
        q.check_lease(l.receipt, ts(11)),
        Err(ReceiptError::Redelivered(l.id))
    );
    assert_eq!(q.check_lease(again.receipt, ts(11)), Ok(()));
    q.ack(again.receipt, ts(12)).unwrap();
    assert_eq!(
        q.check_lease(again.receipt, ts(13)),
        Err(ReceiptError::AlreadyAcked(l.id))
    );
    q.check_invariants().unwrap();
}
