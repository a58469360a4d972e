//! Bad input: every invalid setting gives its typed `ConfigError`; every misuse of a receipt
//! gives its typed error, panics nowhere and loses nothing (invariants hold, the item is
//! recoverable). `Duration::MAX`, pushes, redrives, odd calls, levels and keys are in
//! `bad_input_push.rs`.

use std::time::Duration;

use leaseq_core::{
    Acked, Backoff, Config, ConfigError, Event, Failure, Jitter, LateAckKind, LatencyAdvisor,
    Nacked, PushError, PushOptions, Queue, ReceiptError,
};

use leaseq_test_kit::core_queue::{config, leased, ok, queue, recoverable};
use leaseq_test_kit::time::{ns, ts};

// ----- settings -------------------------------------------------------------------------

#[test]
fn every_invalid_config_gives_its_typed_error() {
    let exp = |base, factor, max| Backoff::Exponential {
        base: ns(base),
        factor,
        max: ns(max),
    };
    let table: Vec<(&str, Config, ConfigError)> = vec![
        (
            "zero visibility",
            Config::new(Duration::ZERO),
            ConfigError::ZeroVisibility,
        ),
        (
            "zero attempts",
            config().with_max_attempts(0),
            ConfigError::ZeroAttempts,
        ),
        (
            "max lease below visibility",
            config().with_max_lease(ns(9)),
            ConfigError::MaxLeaseBelowVisibility {
                max_lease: ns(9),
                visibility: ns(10),
            },
        ),
        (
            "zero capacity",
            config().with_capacity(0),
            ConfigError::ZeroCapacity,
        ),
        (
            "exponential cap below base",
            config().with_backoff(exp(10, 2, 9)),
            ConfigError::BackoffCapBelowBase {
                base: ns(10),
                max: ns(9),
            },
        ),
        (
            "exponential factor 0",
            config().with_backoff(exp(10, 0, 100)),
            ConfigError::BackoffFactorBelowOne(0),
        ),
        (
            "jitter 101%",
            config().with_jitter(Jitter::new(101, 7)),
            ConfigError::JitterAbove100Percent(101),
        ),
        (
            "jitter 255%",
            config().with_jitter(Jitter::new(255, 7)),
            ConfigError::JitterAbove100Percent(255),
        ),
        (
            "the first bad setting is named",
            Config::new(Duration::ZERO)
                .with_max_attempts(0)
                .with_capacity(0),
            ConfigError::ZeroVisibility,
        ),
    ];
    for (name, config, want) in table {
        assert_eq!(config.validate(), Err(want.clone()), "{name}");
        assert_eq!(Queue::<u8>::new(config).err(), Some(want.clone()), "{name}");
        assert!(!want.to_string().is_empty());
    }
}

#[test]
fn settings_at_their_limits_are_accepted() {
    for config in [
        config().with_max_lease(ns(10)),
        config().with_max_attempts(1),
        config().with_capacity(1),
        config().with_backoff(Backoff::Exponential {
            base: ns(10),
            factor: 1,
            max: ns(10),
        }),
        config().with_jitter(Jitter::new(100, 0)),
        config().with_event_capacity(0),
        Config::new(Duration::MAX).with_max_lease(Duration::MAX),
    ] {
        assert_eq!(config.validate(), Ok(()));
        assert!(Queue::<u8>::new(config).is_ok());
    }
}

#[test]
fn latency_advisor_multiplier_must_be_finite_and_at_least_one() {
    for bad in [f64::NAN, 0.5, 0.0, -1.0, f64::INFINITY, f64::NEG_INFINITY] {
        assert_eq!(
            LatencyAdvisor::<u8>::with_rule(ns(1), bad).err(),
            Some(ConfigError::InvalidMultiplier),
            "{bad}"
        );
    }
    for good in [1.0, 3.0, 1e9] {
        assert!(LatencyAdvisor::<u8>::with_rule(ns(1), good).is_ok());
    }
}

// ----- receipts -------------------------------------------------------------------------

#[test]
fn double_ack_is_already_acked() {
    let mut q = queue(config());
    let (id, l) = leased(&mut q, "a");
    assert_eq!(q.ack(l.receipt, ts(1)), Ok(Acked::OnTime));
    while q.poll_event().is_some() {}
    assert_eq!(q.ack(l.receipt, ts(2)), Err(ReceiptError::AlreadyAcked(id)));
    assert_eq!(
        q.poll_event(),
        Some(Event::LateAck {
            id,
            kind: LateAckKind::AlreadyAcked,
            late_by: None
        })
    );
    // Every other use of the receipt says the same.
    assert_eq!(
        q.nack(l.receipt, ts(2), Failure::error("x")),
        Err(ReceiptError::AlreadyAcked(id))
    );
    assert_eq!(
        q.extend(l.receipt, ts(2), ns(5)),
        Err(ReceiptError::AlreadyAcked(id))
    );
    assert_eq!(
        q.dead_letter(l.receipt, ts(2), None),
        Err(ReceiptError::AlreadyAcked(id))
    );
    let s = q.stats();
    assert_eq!((s.acked, s.late_acks_stale), (1, 1));
    ok(&q);
}

#[test]
fn a_receipt_from_another_queue_is_unknown() {
    let mut other = queue(config());
    other.push("theirs", ts(0)).unwrap();
    let foreign = other.receive(ts(0)).unwrap().receipt;
    let mut q = queue(config());
    // Same slot, id and lease number as the foreign one: only the queue differs.
    let (id, mine) = leased(&mut q, "mine");
    assert_eq!(
        (mine.receipt.id(), mine.receipt.lease_number()),
        (foreign.id(), foreign.lease_number())
    );
    assert_eq!(q.ack(foreign, ts(1)), Err(ReceiptError::Unknown));
    assert_eq!(
        q.nack(foreign, ts(1), Failure::error("x")),
        Err(ReceiptError::Unknown)
    );
    assert_eq!(q.extend(foreign, ts(1), ns(5)), Err(ReceiptError::Unknown));
    assert_eq!(
        q.extend(foreign, ts(1), Duration::ZERO),
        Err(ReceiptError::Unknown)
    );
    assert_eq!(q.release(foreign, ts(1)), Err(ReceiptError::Unknown));
    assert_eq!(
        q.dead_letter(foreign, ts(1), None),
        Err(ReceiptError::Unknown)
    );
    let s = q.stats();
    assert_eq!(
        (s.unknown_receipts, s.late_acks_stale, s.in_flight),
        (6, 0, 1)
    );
    assert_eq!(q.ack(mine.receipt, ts(1)), Ok(Acked::OnTime));
    assert_eq!(other.stats().in_flight, 1, "the other queue is untouched");
    let _ = id;
    ok(&q);
}

#[test]
fn ack_after_dead_letter_is_dead_lettered() {
    let mut q = queue(config());
    let (id, l) = leased(&mut q, "a");
    assert_eq!(
        q.dead_letter(l.receipt, ts(1), Some("poison".into())),
        Ok(1)
    );
    assert_eq!(q.ack(l.receipt, ts(2)), Err(ReceiptError::DeadLettered(id)));
    assert_eq!(
        q.dead_letter(l.receipt, ts(2), None),
        Err(ReceiptError::DeadLettered(id))
    );
    assert_eq!(q.stats().late_acks_stale, 1);
    // Recoverable from the dead letters.
    assert_eq!(q.redrive(id, ts(3)), Ok(id));
    recoverable(&mut q, id, "a");
}

#[test]
fn nack_after_nack_is_released() {
    let mut q = queue(config());
    let (id, l) = leased(&mut q, "a");
    assert!(matches!(
        q.nack(l.receipt, ts(1), Failure::error("x")),
        Ok(Nacked::Retrying { .. })
    ));
    assert_eq!(
        q.nack(l.receipt, ts(1), Failure::error("y")),
        Err(ReceiptError::Released(id))
    );
    assert_eq!(q.release(l.receipt, ts(1)), Err(ReceiptError::Released(id)));
    assert_eq!(
        q.extend(l.receipt, ts(1), ns(5)),
        Err(ReceiptError::Released(id))
    );
    assert_eq!(q.ack(l.receipt, ts(1)), Err(ReceiptError::Released(id)));
    let s = q.stats();
    assert_eq!((s.nacks, s.late_acks_stale), (1, 1));
    recoverable(&mut q, id, "a");
}

#[test]
fn nack_after_lease_expiry_is_lease_expired() {
    let mut q = queue(config());
    let (id, l) = leased(&mut q, "a");
    // At the deadline the attempt has already been counted as expired.
    assert_eq!(
        q.nack(l.receipt, ts(10), Failure::error("x")),
        Err(ReceiptError::LeaseExpired(id))
    );
    assert_eq!(
        q.release(l.receipt, ts(10)),
        Err(ReceiptError::LeaseExpired(id))
    );
    assert_eq!(
        q.extend(l.receipt, ts(10), ns(5)),
        Err(ReceiptError::LeaseExpired(id))
    );
    assert_eq!(
        q.extend(l.receipt, ts(10), Duration::ZERO),
        Err(ReceiptError::LeaseExpired(id))
    );
    let s = q.stats();
    assert_eq!((s.nacks, s.lease_expired, s.ready), (0, 1, 1));
    recoverable(&mut q, id, "a");
}

#[test]
fn time_going_backwards_is_taken_as_the_latest_seen() {
    let mut q = queue(config());
    let id = q.push("a", ts(100)).unwrap();
    let l = q.receive(ts(50)).unwrap();
    assert_eq!(q.now(), ts(100));
    assert_eq!(l.deadline, ts(110), "from the latest time, not from 50");
    // An expiry in the caller's future but the queue's past.
    match q.push_with("b", ts(50), PushOptions::new().expires_at(ts(80))) {
        Err(PushError::AlreadyExpired(b)) => assert_eq!(b, "b"),
        other => panic!("{other:?}"),
    }
    // A deadline that passed at the latest time has passed.
    q.handle_timeout(ts(110));
    assert_eq!(
        q.nack(l.receipt, ts(0), Failure::error("x")),
        Err(ReceiptError::LeaseExpired(id))
    );
    assert_eq!(q.now(), ts(110));
    recoverable(&mut q, id, "a");
}
