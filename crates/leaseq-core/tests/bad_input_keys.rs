//! Bad input to pushes with a level or a unique key: a bad level or an oversized key hands
//! the item back, the key bounds, refused cancels and redrives change nothing.

use leaseq_core::{
    CancelError, Failure, MessageId, PushError, PushOptions, Queue, RedriveError, UniqueKey,
    MAX_PRIORITY,
};

use leaseq_test_kit::core_queue::{config, ok, queue, recoverable};
use leaseq_test_kit::time::{ns, ts};

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
    let mut q = queue(config());
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
