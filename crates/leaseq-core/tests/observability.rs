//! What the core offers observers: dead letters counted by reason.

use std::time::Duration;

use leaseq_core::{Config, Failure, PushOptions, Queue, Reason, Timestamp};

fn at(ms: u64) -> Timestamp {
    Timestamp::from_duration(Duration::from_millis(ms))
}

/// `dead_lettered_by` counts each burial under its reason, whatever buried it (a nack, a
/// holder's `dead_letter`, a lease running out, an expiry), and the counts add up to
/// `Stats::dead_lettered`; taking dead letters does not lower them.
#[test]
fn dead_letters_are_counted_by_reason() {
    let config = Config::new(Duration::from_secs(1)).with_max_attempts(1);
    let mut q: Queue<u32> = Queue::new(config).unwrap();
    for n in 0..4 {
        q.push(n, at(0)).unwrap();
    }
    let expiring = PushOptions::new()
        .delay(Duration::from_secs(10))
        .expires_at(at(500));
    q.push_with(4, at(0), expiring).unwrap();
    let a = q.receive(at(0)).unwrap();
    q.nack(a.receipt, at(0), Failure::error("boom")).unwrap();
    let b = q.receive(at(0)).unwrap();
    q.nack(b.receipt, at(0), Failure::timed_out()).unwrap();
    let c = q.receive(at(0)).unwrap();
    q.dead_letter(c.receipt, at(0), None).unwrap();
    let _d = q.receive(at(0)).unwrap();
    q.handle_timeout(at(2000));
    let by = |r| q.dead_lettered_by(r);
    assert_eq!(
        Reason::ALL.map(by),
        [1, 1, 1, 0, 0, 1, 0, 1, 0],
        "lease expired, nacked, timed out, dropped, released, rejected, panicked, expired, \
         undecodable"
    );
    assert_eq!(
        Reason::ALL.map(by).iter().sum::<u64>(),
        q.stats().dead_lettered
    );
    assert_eq!(q.take_dead_letters().len(), 5);
    assert_eq!(q.dead_lettered_by(Reason::Nacked), 1);
}

/// Serde round trips (feature `serde`): every type that deserializes comes back equal.
#[cfg(feature = "serde")]
mod serde_round_trips {
    use std::fmt::Debug;
    use std::time::Duration;

    use leaseq_core::{
        Backoff, Config, DeadLetter, Event, EventMask, Failure, ItemState, ItemView, Jitter,
        LateAckKind, LatencyAdvisor, MessageId, Outcome, PushOptions, Queue, Reason, Stats,
        Timestamp, TypeReport, UniqueKey,
    };
    use serde::de::DeserializeOwned;
    use serde::Serialize;

    use super::at;

    fn round_trip<V: Serialize + DeserializeOwned + PartialEq + Debug>(value: &V) -> String {
        let json = serde_json::to_string(value).unwrap();
        let back: V = serde_json::from_str(&json).unwrap();
        assert_eq!(&back, value, "through {json}");
        json
    }

    #[test]
    fn ids_and_timestamps_are_plain_numbers() {
        assert_eq!(round_trip(&MessageId::new(42)), "42");
        assert_eq!(round_trip(&Timestamp::from_nanos(1_500)), "1500");
        assert_eq!(round_trip(&Timestamp::MAX), u64::MAX.to_string());
        assert_eq!(round_trip(&EventMask::DEAD_LETTERED), "8");
        round_trip(&(EventMask::DEFAULT | EventMask::DELIVERED));
    }

    #[test]
    fn reasons_outcomes_and_late_ack_kinds() {
        for reason in Reason::ALL {
            round_trip(&reason);
        }
        assert_eq!(round_trip(&Reason::TimedOut), "\"TimedOut\"");
        // Renamed from `Terminated`: the old name still reads, the new one is written.
        assert_eq!(round_trip(&Reason::Rejected), "\"Rejected\"");
        let old: Reason = serde_json::from_str("\"Terminated\"").unwrap();
        assert_eq!(old, Reason::Rejected);
        assert_eq!(
            Reason::Rejected.code(),
            5,
            "stores keep the code: it never changes"
        );
        for kind in [
            LateAckKind::Unclaimed,
            LateAckKind::Redelivered,
            LateAckKind::DeadLettered,
            LateAckKind::AlreadyAcked,
            LateAckKind::Released,
            LateAckKind::Cancelled,
        ] {
            round_trip(&kind);
        }
        for outcome in [
            Outcome::Ok,
            Outcome::Failed,
            Outcome::TimedOut,
            Outcome::Panicked,
        ] {
            round_trip(&outcome);
        }
    }

    #[test]
    fn configs_with_every_setting() {
        let default = round_trip(&Config::new(Duration::from_millis(250)));
        assert!(default.contains("\"jitter\":{\"percent\":50"), "{default}");
        round_trip(&Config::new(Duration::from_millis(250)).without_jitter());
        let full = Config::new(Duration::from_secs(30))
            .with_max_attempts(7)
            .with_backoff(Backoff::exponential(
                Duration::from_millis(10),
                Duration::from_secs(5),
            ))
            .with_jitter(Jitter::new(20, 0xfeed))
            .with_max_lease(Duration::from_secs(600))
            .with_capacity(10_000)
            .with_events(EventMask::DEAD_LETTERED | EventMask::LATE_ACK)
            .with_event_capacity(64);
        let json = round_trip(&full);
        assert!(json.contains("\"max_attempts\":7"), "{json}");
        round_trip(&Backoff::None);
        round_trip(&Backoff::Fixed(Duration::from_millis(3)));
        // A deserialized config is validated by `Queue::new` like any other.
        let bad: Config =
            serde_json::from_str(&json.replace("\"max_attempts\":7", "\"max_attempts\":0"))
                .unwrap();
        assert!(Queue::<u8>::new(bad).is_err());
    }

    #[test]
    fn events_of_every_kind() {
        let id = MessageId::new(3);
        let events = [
            Event::Delivered { id },
            Event::Redelivered { id, attempt: 2 },
            Event::LeaseExpired {
                id,
                attempt: 1,
                deadline: Timestamp::from_nanos(9),
            },
            Event::DeadLettered {
                id,
                attempts: 5,
                reason: Reason::Nacked,
            },
            Event::LateAck {
                id,
                kind: LateAckKind::Unclaimed,
                late_by: Some(Duration::from_millis(7)),
            },
            Event::ExtensionCapped {
                id,
                deadline: Timestamp::MAX,
            },
            Event::Cancelled {
                id,
                in_flight: true,
            },
            Event::Replaced {
                id,
                by: MessageId::new(4),
            },
        ];
        for event in &events {
            round_trip(event);
        }
    }

    /// Stats and dead letters as a real queue leaves them: every counter moved, and dead
    /// letters with errors, expiries and lease counts.
    #[test]
    fn stats_and_dead_letters_from_a_queue() {
        // Retried at once: this test is about what serializes, not about backoff.
        let config = Config::new(Duration::from_secs(1))
            .with_max_attempts(2)
            .with_backoff(Backoff::None);
        let mut q: Queue<String> = Queue::new(config).unwrap();
        q.push("a".to_string(), at(0)).unwrap();
        let lease = q.receive(at(0)).unwrap();
        q.nack(lease.receipt, at(0), Failure::error("first"))
            .unwrap();
        let lease = q.receive(at(0)).unwrap();
        q.nack(lease.receipt, at(0), Failure::error("second"))
            .unwrap();
        let expiring = PushOptions::new()
            .expires_at(at(100))
            .priority(5)
            .key("invoice:42");
        q.push_with("b".to_string(), at(0), expiring).unwrap();
        q.handle_timeout(at(200));
        let letters: Vec<DeadLetter<String>> = q.dead_letters().cloned().collect();
        assert_eq!(letters.len(), 2);
        assert_eq!(letters[1].key, UniqueKey::new("invoice:42"));
        assert_eq!(letters[1].priority, 5);
        for letter in &letters {
            round_trip(letter);
        }
        // The lease count travels too: a value with another one is not equal.
        let json = serde_json::to_string(&letters[0]).unwrap();
        assert!(json.contains("\"leases\":2"), "{json}");
        let other: DeadLetter<String> =
            serde_json::from_str(&json.replace("\"leases\":2", "\"leases\":3")).unwrap();
        assert_ne!(other, letters[0]);
        let stats = q.stats();
        assert!(stats.dead_lettered == 2 && stats.nacks == 2 && stats.expired == 1);
        let json = round_trip(&stats);
        assert!(json.contains("\"dead_lettered\":2"), "{json}");
        round_trip(&Stats::default());
    }

    #[test]
    fn type_reports() {
        let mut advisor = LatencyAdvisor::new();
        for ms in 1..=100 {
            advisor.record("resize", Duration::from_millis(ms), Outcome::Ok);
        }
        advisor.record("resize", Duration::from_secs(1), Outcome::TimedOut);
        let report: TypeReport = advisor.report(&"resize").unwrap();
        assert!(report.p99.is_some() && report.timeout_ppm > 0);
        round_trip(&report);
        // Nothing finished: no quantiles, no suggestion.
        let mut empty = LatencyAdvisor::new();
        empty.record("x", Duration::from_secs(1), Outcome::TimedOut);
        round_trip(&empty.report(&"x").unwrap());
    }

    /// Keys read as strings when they are UTF-8, as bytes otherwise; too long is refused.
    #[test]
    fn unique_keys() {
        let key = UniqueKey::new("invoice:42").unwrap();
        assert_eq!(round_trip(&key), "\"invoice:42\"");
        let binary = UniqueKey::new([0xff, 0x00, 0x7f]).unwrap();
        assert_eq!(round_trip(&binary), "[255,0,127]");
        round_trip(&UniqueKey::new("").unwrap());
        let longest = UniqueKey::new([b'k'; UniqueKey::MAX_LEN]).unwrap();
        round_trip(&longest);
        let too_long = format!("\"{}\"", "k".repeat(UniqueKey::MAX_LEN + 1));
        assert!(serde_json::from_str::<UniqueKey>(&too_long).is_err());
        let too_many = serde_json::to_string(&vec![1u8; UniqueKey::MAX_LEN + 1]).unwrap();
        assert!(serde_json::from_str::<UniqueKey>(&too_many).is_err());
    }

    /// What `Queue::items` shows, in every state.
    #[test]
    fn item_views() {
        let mut q: Queue<u8> = Queue::new(Config::new(Duration::from_secs(1))).unwrap();
        q.push_with(1, at(0), PushOptions::new().key("k").priority(2))
            .unwrap();
        q.push_with(2, at(0), PushOptions::new().delay(Duration::from_secs(5)))
            .unwrap();
        q.push(3, at(0)).unwrap();
        let _lease = q.receive(at(0)).unwrap();
        let views: Vec<ItemView> = q.items().collect();
        assert_eq!(views.len(), 3);
        assert!(views
            .iter()
            .any(|v| matches!(v.state, ItemState::InFlight { .. })));
        assert!(views.iter().any(|v| v.state == ItemState::Delayed));
        assert!(views.iter().any(|v| v.state == ItemState::Ready));
        for view in &views {
            round_trip(view);
        }
    }
}
