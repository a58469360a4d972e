//! `Stats::rejected` counts refusals returned to a caller: a push that waits for room
//! (`PushOptions::waits_for_room`) is not counted when refused as full, every other refusal
//! is, on every push path (plain, with options, keyed, under a chosen id).

use leaseq_core::{MessageId, PushError, PushOptions, Queue};

use leaseq_test_kit::core_queue::config;
use leaseq_test_kit::time::ts;

/// A full queue: a plain push, a push with options and a keyed one count one each; the same
/// three from a caller that waits for room count nothing, and hand the item back all the same.
#[test]
fn a_full_refusal_counts_unless_the_caller_waits_for_room() {
    let mut q = Queue::new(config().with_capacity(1)).unwrap();
    q.push("a", ts(0)).unwrap();
    assert!(matches!(q.push("b", ts(0)), Err(PushError::Full("b"))));
    let plain = PushOptions::new();
    for (item, options) in [("c", plain.priority(3)), ("d", plain.key("k"))] {
        let refused = q.push_with(item, ts(0), options);
        assert!(
            matches!(refused, Err(PushError::Full(i)) if i == item),
            "{item}"
        );
    }
    assert_eq!(q.stats().rejected, 3);

    let waits = PushOptions::new().waits_for_room();
    for (item, options) in [
        ("e", waits),
        ("f", waits.priority(3)),
        ("g", waits.key("k")),
    ] {
        let refused = q.push_with(item, ts(0), options);
        assert!(
            matches!(refused, Err(PushError::Full(i)) if i == item),
            "{item}"
        );
    }
    assert!(matches!(
        q.push_with_id(q.next_id(), "h", ts(0), waits),
        Err(PushError::Full("h"))
    ));
    let s = q.stats();
    assert_eq!((s.pushed, s.rejected), (1, 3), "{s:?}");
    s.check_conservation().unwrap();
    q.check_invariants().unwrap();
}

/// Waiting for room excuses only a full queue: a waiting push refused for its level, its
/// key's length, its expiry, a held key or an id out of order is returned to its caller and
/// counted; once there is room it is accepted like any push.
#[test]
fn a_waiting_push_refused_for_another_reason_counts() {
    let mut q = Queue::new(config().with_capacity(2)).unwrap();
    let waits = PushOptions::new().waits_for_room();
    let holder = q.push_with("a", ts(0), waits.key("k")).unwrap();
    assert!(matches!(
        q.push_with("b", ts(0), waits.priority(8)),
        Err(PushError::PriorityOutOfRange { item: "b", .. })
    ));
    assert!(matches!(
        q.push_with("c", ts(0), waits.key([b'x'; 65])),
        Err(PushError::KeyTooLong { item: "c", .. })
    ));
    assert!(matches!(
        q.push_with("d", ts(1), waits.expires_at(ts(1))),
        Err(PushError::AlreadyExpired("d"))
    ));
    assert!(matches!(
        q.push_with("e", ts(1), waits.key("k")),
        Err(PushError::DuplicateKey { item: "e", existing }) if existing == holder
    ));
    assert!(matches!(
        q.push_with_id(MessageId::new(0), "f", ts(1), waits),
        Err(PushError::IdOutOfOrder("f"))
    ));
    let s = q.stats();
    assert_eq!((s.pushed, s.rejected, s.duplicates), (1, 5, 1), "{s:?}");
    q.push_with("g", ts(1), waits).unwrap();
    assert_eq!((q.stats().pushed, q.stats().rejected), (2, 5));
    q.check_invariants().unwrap();
}
