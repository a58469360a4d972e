//! Bad input to pushes and redrives: `Duration::MAX` everywhere, a push refused at capacity
//! or past its expiry, redrive refusals, odd calls, bad levels and oversized keys: each a
//! typed error that hands the item back, panics nowhere and loses nothing.

use std::time::Duration;

use leaseq_core::{
    Acked, Backoff, Config, Extended, Failure, Jitter, Nacked, PushError, PushOptions, Queue,
    Reason, Receipt, RedriveError, Timestamp,
};

use leaseq_test_kit::core_queue::{config, leased, ok, queue, recoverable};
use leaseq_test_kit::time::{ns, ts};

// ----- Duration::MAX everywhere ---------------------------------------------------------

#[test]
fn duration_max_saturates_to_never() {
    // As a delay.
    let mut q = queue(config());
    let id = q.push_delayed("a", ts(5), Duration::MAX).unwrap();
    assert_eq!(q.poll_timeout(), Some(Timestamp::MAX));
    assert!(q.receive(ts(u64::MAX - 1)).is_none());
    recoverable(&mut q, id, "a");

    // As the visibility (and the max lease).
    let mut q: Queue<&str> =
        Queue::new(Config::new(Duration::MAX).with_max_lease(Duration::MAX)).unwrap();
    let id = q.push("b", ts(5)).unwrap();
    let l = q.receive(ts(5)).unwrap();
    assert_eq!(l.deadline, Timestamp::MAX);
    assert_eq!(q.ack(l.receipt, ts(u64::MAX - 1)), Ok(Acked::OnTime));
    let _ = id;
    ok(&q);

    // As an extension, uncapped and capped.
    let mut q = queue(config());
    let (id, l) = leased(&mut q, "c");
    assert_eq!(
        q.extend(l.receipt, ts(1), Duration::MAX),
        Ok(Extended::Until {
            deadline: Timestamp::MAX,
            capped: false
        })
    );
    assert_eq!(q.ack(l.receipt, ts(1 << 60)), Ok(Acked::OnTime));
    let _ = id;
    let mut q: Queue<&str> = Queue::new(config().with_max_lease(ns(50))).unwrap();
    q.push("d", ts(0)).unwrap();
    let l = q.receive(ts(0)).unwrap();
    assert_eq!(
        q.extend(l.receipt, ts(1), Duration::MAX),
        Ok(Extended::Until {
            deadline: ts(50),
            capped: true
        })
    );
    ok(&q);

    // As a backoff, fixed and exponential, and as retry_after.
    let huge_factor = Backoff::Exponential {
        base: ns(1),
        factor: u32::MAX,
        max: Duration::MAX,
    };
    for (backoff, first) in [
        (Backoff::Fixed(Duration::MAX), Timestamp::MAX),
        (
            Backoff::exponential(Duration::MAX, Duration::MAX),
            Timestamp::MAX,
        ),
        (huge_factor, ts(1)),
    ] {
        let mut q: Queue<&str> = Queue::new(config().with_backoff(backoff)).unwrap();
        let (id, l) = leased(&mut q, "e");
        assert_eq!(
            q.nack(l.receipt, ts(0), Failure::error("x")),
            Ok(Nacked::Retrying {
                visible_at: first,
                attempts: 1
            }),
            "{backoff:?}"
        );
        recoverable(&mut q, id, "e");
    }
    let mut q: Queue<&str> = Queue::new(config().with_backoff(huge_factor)).unwrap();
    q.push("e", ts(0)).unwrap();
    let l = q.receive(ts(0)).unwrap();
    q.nack(l.receipt, ts(0), Failure::error("x")).unwrap();
    let l = q.receive(ts(1)).unwrap();
    assert_eq!(
        q.nack(l.receipt, ts(1), Failure::error("x")),
        Ok(Nacked::Retrying {
            visible_at: ts(1 + u32::MAX as u64),
            attempts: 2
        })
    );
    ok(&q);
    let mut q = queue(config());
    let (id, l) = leased(&mut q, "f");
    assert_eq!(
        q.nack(
            l.receipt,
            ts(1),
            Failure::error("x").retry_after(Duration::MAX)
        ),
        Ok(Nacked::Retrying {
            visible_at: Timestamp::MAX,
            attempts: 1
        })
    );
    recoverable(&mut q, id, "f");

    // Jitter of a MAX delay stays within range.
    let mut q: Queue<&str> = Queue::new(
        config()
            .with_backoff(Backoff::Fixed(Duration::MAX))
            .with_jitter(Jitter::new(100, 3)),
    )
    .unwrap();
    q.push("g", ts(0)).unwrap();
    let l = q.receive(ts(0)).unwrap();
    assert!(q.nack(l.receipt, ts(1), Failure::error("x")).is_ok());
    ok(&q);
}

// ----- push and redrive -----------------------------------------------------------------

#[test]
fn push_at_capacity_hands_the_item_back() {
    let mut q: Queue<String> = Queue::new(config().with_capacity(2)).unwrap();
    q.push("a".into(), ts(0)).unwrap();
    q.push_delayed("b".into(), ts(0), ns(5)).unwrap();
    match q.push("c".into(), ts(0)) {
        Err(e @ PushError::Full(_)) => {
            assert!(!e.to_string().is_empty());
            assert_eq!(e.into_item(), "c");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        q.push_with("d".into(), ts(0), PushOptions::new()),
        Err(PushError::Full(d)) if d == "d"
    ));
    assert_eq!((q.stats().rejected, q.len()), (2, 2));
    // In flight items count too; a settled one makes room.
    let l = q.receive(ts(0)).unwrap();
    assert!(matches!(q.push("e".into(), ts(0)), Err(PushError::Full(_))));
    q.ack(l.receipt, ts(0)).unwrap();
    assert!(q.push("e".into(), ts(0)).is_ok());
    ok(&q);
}

#[test]
fn push_with_an_expiry_not_after_now_hands_the_item_back() {
    let mut q = queue(config());
    for at in [0, 99, 100] {
        match q.push_with("a", ts(100), PushOptions::new().expires_at(ts(at))) {
            Err(e @ PushError::AlreadyExpired(_)) => assert_eq!(e.into_item(), "a"),
            other => panic!("expires at {at}: {other:?}"),
        }
    }
    assert_eq!((q.stats().rejected, q.stats().pushed), (3, 0));
    let id = q
        .push_with("b", ts(100), PushOptions::new().expires_at(ts(101)))
        .unwrap();
    recoverable(&mut q, id, "b");
}

/// The expiry check on every push path with options (`push_with`, `push_take`,
/// `push_with_id`, `push_with_id_take`): an expiry not after `now` is refused, counted and
/// does not use up the id; `Timestamp::MAX` is "never", even pushed at `Timestamp::MAX`.
#[test]
fn every_push_path_refuses_an_expiry_not_after_now_and_never_max() {
    let at = |t| PushOptions::new().expires_at(t);
    let mut q = queue(config());
    let now = ts(100);
    assert!(matches!(
        q.push_take("a", now, at(now)),
        Err(PushError::AlreadyExpired("a"))
    ));
    let id = q.next_id();
    assert!(matches!(
        q.push_with_id(id, "b", now, at(ts(99))),
        Err(PushError::AlreadyExpired("b"))
    ));
    assert!(matches!(
        q.push_with_id_take(id, "c", now, at(now)),
        Err(PushError::AlreadyExpired("c"))
    ));
    assert_eq!(q.next_id(), id, "a refused push leaves its id unused");
    assert_eq!((q.stats().rejected, q.stats().pushed), (3, 0));
    let max = Timestamp::MAX;
    let kept = [
        q.push_with("d", max, at(max)).unwrap(),
        q.push_take("e", max, at(max)).unwrap().id,
        q.push_with_id(q.next_id(), "f", max, at(max)).unwrap(),
        q.push_with_id_take(q.next_id(), "g", max, at(max))
            .unwrap()
            .id,
    ];
    assert_eq!((q.stats().rejected, q.stats().pushed), (3, 4));
    for (id, item) in kept.into_iter().zip(["d", "e", "f", "g"]) {
        assert_eq!(
            q.receive(max).map(|l| l.id),
            Some(id),
            "{item} never expires"
        );
    }
    assert_eq!(q.stats().expired, 0);
    ok(&q);
}

#[test]
fn redrive_refusals_keep_the_dead_letter() {
    let mut scratch = queue(config());
    let unknown = (0..7)
        .map(|_| scratch.push("x", ts(0)).unwrap())
        .last()
        .unwrap();

    let mut q: Queue<&str> = Queue::new(config().with_capacity(1)).unwrap();
    assert_eq!(
        q.redrive(unknown, ts(0)),
        Err(RedriveError::NotFound(unknown))
    );
    assert!(q.take_dead_letter(unknown).is_none());

    // An expired dead letter stays.
    let expired = q
        .push_with("e", ts(0), PushOptions::new().expires_at(ts(5)))
        .unwrap();
    q.handle_timeout(ts(5));
    assert_eq!(
        q.redrive(expired, ts(6)),
        Err(RedriveError::Expired(expired))
    );
    assert_eq!(q.redrive_all(ts(6)), 0);
    assert_eq!(q.get_dead_letter(expired).unwrap().reason, Reason::Expired);

    // At capacity, it stays too.
    let poison = q.push("p", ts(6)).unwrap();
    let l = q.receive(ts(6)).unwrap();
    q.dead_letter(l.receipt, ts(6), None).unwrap();
    let blocker = q.push("b", ts(6)).unwrap();
    assert_eq!(q.redrive(poison, ts(7)), Err(RedriveError::Full(poison)));
    assert_eq!(q.redrive_all(ts(7)), 0);
    assert!(q.get_dead_letter(poison).is_some());
    assert_eq!(q.stats().dead, 2);
    ok(&q);
    // Room again: it goes back.
    recoverable(&mut q, blocker, "b");
    assert_eq!(q.redrive(poison, ts(8)), Ok(poison));
    recoverable(&mut q, poison, "p");
    for e in [
        RedriveError::NotFound(unknown),
        RedriveError::Expired(expired),
        RedriveError::Full(poison),
    ] {
        assert!(!e.to_string().is_empty());
    }
}

// ----- odd calls ------------------------------------------------------------------------

#[test]
fn odd_calls_do_nothing_harmful() {
    let mut q = queue(config());
    assert!(q.receive(ts(0)).is_none());
    let mut out = Vec::new();
    assert_eq!(q.receive_many(ts(0), 5, &mut out), 0);
    let id = q.push("a", ts(0)).unwrap();
    assert_eq!(q.receive_many(ts(0), 0, &mut out), 0);
    assert!(out.is_empty());
    assert_eq!(q.ack_many(&[], ts(0)), 0);
    assert!(q.take_dead_letters().is_empty());
    q.handle_timeout(Timestamp::ZERO);
    let l = q.receive(ts(0)).unwrap();
    // The same receipt twice in one batch: accepted once.
    let receipts: Vec<Receipt> = vec![l.receipt, l.receipt];
    assert_eq!(q.ack_many(&receipts, ts(1)), 1);
    assert_eq!(q.stats().late_acks_stale, 1);
    assert!(q.is_empty());
    let _ = id;
    ok(&q);
}
