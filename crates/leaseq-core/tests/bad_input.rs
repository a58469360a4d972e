//! Bad input: every invalid setting gives its typed `ConfigError`; every misuse gives its
//! typed error, panics nowhere and loses nothing (invariants hold, the item is recoverable).

use std::time::Duration;

use leaseq_core::{
    Acked, Backoff, CancelError, Config, ConfigError, Event, Extended, Failure, Jitter,
    LateAckKind, LatencyAdvisor, MessageId, Nacked, PushError, PushOptions, Queue, Reason, Receipt,
    ReceiptError, RedriveError, Timestamp, UniqueKey, MAX_PRIORITY,
};

use leaseq_test_kit::core_queue::{config, leased, ok};
use leaseq_test_kit::time::{ns, ts};

fn queue() -> Queue<&'static str> {
    Queue::new(config()).unwrap()
}

/// The item behind `id` can still be received and acked: nothing was lost.
fn recoverable(q: &mut Queue<&'static str>, id: MessageId, item: &str) {
    ok(q);
    let mut now = q.now();
    let l = match q.receive(now) {
        Some(l) => l,
        None => {
            // Waiting for a delay or backoff: wake when the queue says.
            now = q.poll_timeout().expect("the item is scheduled").max(now);
            q.handle_timeout(now);
            q.receive(now).expect("the item comes back")
        }
    };
    assert_eq!((l.id, l.item), (id, item));
    let acked = q.ack(l.receipt, now);
    if now == Timestamp::MAX {
        // A lease handed out at "never" is due at once, but nobody else has it.
        assert!(
            matches!(acked, Ok(Acked::LateUnclaimed { .. })),
            "{acked:?}"
        );
    } else {
        assert_eq!(acked, Ok(Acked::OnTime));
    }
    ok(q);
}

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
    let mut q = queue();
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
    let mut other = queue();
    other.push("theirs", ts(0)).unwrap();
    let foreign = other.receive(ts(0)).unwrap().receipt;
    let mut q = queue();
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
    let mut q = queue();
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
    let mut q = queue();
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
    let mut q = queue();
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
    let mut q = queue();
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

// ----- Duration::MAX everywhere ---------------------------------------------------------

#[test]
fn duration_max_saturates_to_never() {
    // As a delay.
    let mut q = queue();
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
    let mut q = queue();
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
    let mut q = queue();
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
    let mut q = queue();
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
    let mut q = queue();
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
    let mut scratch = queue();
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
    let mut q = queue();
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

// ----- priority levels and unique keys ----------------------------------------------------

/// A level out of range and an oversized key are refused by every push that takes options,
/// with the item handed back and nothing changed: no id used, nothing counted but the
/// refusal, no key taken. The limits themselves are accepted.
#[test]
fn a_bad_level_or_an_oversized_key_hands_the_item_back() {
    let long = [b'k'; UniqueKey::MAX_LEN + 1];
    let huge = vec![7u8; 10_000];
    let table: Vec<(&str, PushOptions, &str)> = vec![
        (
            "level 8",
            PushOptions::new().priority(8),
            "PriorityOutOfRange 8",
        ),
        (
            "level 255",
            PushOptions::new().priority(u8::MAX),
            "PriorityOutOfRange 255",
        ),
        (
            "key of 65 bytes",
            PushOptions::new().key(long),
            "KeyTooLong 65",
        ),
        (
            "key of 10,000 bytes",
            PushOptions::new().key(&huge),
            "KeyTooLong 10000",
        ),
        (
            "both: the level is checked first",
            PushOptions::new().priority(9).key(long),
            "PriorityOutOfRange 9",
        ),
        (
            "an oversized key with replace_pending and a delay",
            PushOptions::new().key(long).replace_pending().delay(ns(5)),
            "KeyTooLong 65",
        ),
        (
            "a bad level before an expiry in the past",
            PushOptions::new().priority(8).expires_at(ts(0)),
            "PriorityOutOfRange 8",
        ),
    ];
    let mut q = queue();
    let held = q
        .push_with("held", ts(0), PushOptions::new().key(b"k"))
        .unwrap();
    let before = (q.stats(), q.next_id(), q.index_sizes().keys);
    for (i, (name, options, want)) in table.iter().enumerate() {
        let results = [
            q.push_with("x", ts(1), *options),
            q.push_take("x", ts(1), *options).map(|p| p.id),
            q.push_with_id(MessageId::new(50 + i as u64), "x", ts(1), *options),
            q.push_with_id_take(MessageId::new(50 + i as u64), "x", ts(1), *options)
                .map(|p| p.id),
        ];
        for r in results {
            let e = r.expect_err(name);
            let got = match &e {
                PushError::PriorityOutOfRange { level, .. } => {
                    format!("PriorityOutOfRange {level}")
                }
                PushError::KeyTooLong { len, .. } => format!("KeyTooLong {len}"),
                other => panic!("{name}: {other:?}"),
            };
            assert_eq!(&got, want, "{name}");
            assert!(!e.to_string().is_empty());
            assert!(!format!("{e:?}").is_empty());
            assert_eq!(e.existing(), None);
            assert_eq!(e.into_item(), "x", "{name}: the item is handed back");
        }
    }
    let (stats, next_id, keys) = before;
    let now = q.stats();
    assert_eq!(now.rejected, stats.rejected + 4 * table.len() as u64);
    assert_eq!(
        (now.pushed, now.ready, now.duplicates),
        (stats.pushed, stats.ready, 0)
    );
    assert_eq!((q.next_id(), q.index_sizes().keys), (next_id, keys));
    assert_eq!(q.key_holder(b"k"), Some(held));
    // The limits are accepted.
    let top = q
        .push_with("top", ts(1), PushOptions::new().priority(MAX_PRIORITY))
        .unwrap();
    let longest = q
        .push_with(
            "longest",
            ts(1),
            PushOptions::new().key([b'k'; UniqueKey::MAX_LEN]),
        )
        .unwrap();
    let empty = q
        .push_with("empty", ts(1), PushOptions::new().key(""))
        .unwrap();
    assert_eq!(q.key_holder([b'k'; UniqueKey::MAX_LEN]), Some(longest));
    assert_eq!(q.key_holder(""), Some(empty));
    recoverable(&mut q, top, "top");
    recoverable(&mut q, held, "held");
    recoverable(&mut q, longest, "longest");
    recoverable(&mut q, empty, "empty");
}

/// `UniqueKey::new` refuses what a push would refuse, and reads back what it was given.
#[test]
fn unique_key_bounds() {
    assert_eq!(UniqueKey::new([0u8; UniqueKey::MAX_LEN + 1]), None);
    let k = UniqueKey::new([1u8; UniqueKey::MAX_LEN]).unwrap();
    assert_eq!(
        (k.len(), k.as_bytes()),
        (UniqueKey::MAX_LEN, &[1u8; 64][..])
    );
    let e = UniqueKey::new("").unwrap();
    assert!(e.is_empty());
    assert_eq!(format!("{}", UniqueKey::new("a b\n").unwrap()), "a b\\x0a");
    assert_eq!(PushOptions::new().key([0u8; 65]).key_bytes(), None);
    assert_eq!(PushOptions::new().key("ab").key_bytes(), Some(&b"ab"[..]));
}

/// Refused cancels and redrives change nothing.
#[test]
fn refused_cancels_and_redrives_change_nothing() {
    let mut q: Queue<&str> = Queue::new(config().with_max_attempts(1)).unwrap();
    let dead = q
        .push_with("d", ts(0), PushOptions::new().key("k"))
        .unwrap();
    let l = q.receive(ts(0)).unwrap();
    q.nack(l.receipt, ts(0), Failure::error("e")).unwrap();
    let holder = q
        .push_with("h", ts(0), PushOptions::new().key("k"))
        .unwrap();
    let leased = q.receive(ts(0)).unwrap();
    let before = q.stats();
    assert_eq!(q.cancel(holder, ts(0)), Err(CancelError::InFlight(holder)));
    assert_eq!(q.cancel(dead, ts(0)), Err(CancelError::DeadLettered(dead)));
    assert_eq!(
        q.cancel(MessageId::new(1000), ts(0)),
        Err(CancelError::NotFound(MessageId::new(1000)))
    );
    assert_eq!(
        q.redrive(dead, ts(0)),
        Err(RedriveError::KeyTaken { id: dead, holder })
    );
    assert_eq!(q.stats(), before);
    ok(&q);
    q.ack(leased.receipt, ts(0)).unwrap();
    assert_eq!(q.redrive(dead, ts(0)), Ok(dead));
    recoverable(&mut q, dead, "d");
}
