//! One test per rule of unique keys and replacement (crate docs: "Unique keys"), at exact
//! instants (virtual time, nanoseconds).

use leaseq_core::{
    Acked, Backoff, Event, Failure, MessageId, PushError, PushOptions, Queue, Reason, ReceiptError,
    RedriveError, UniqueKey,
};

use leaseq_test_kit::core_queue::{config, drain, events, keyed, ok, queue};
use leaseq_test_kit::time::{ns, ts};

// ----- unique keys ----------------------------------------------------------------------

#[test]
fn a_duplicate_key_is_refused_while_the_holder_is_ready_delayed_or_in_flight() {
    let mut q = queue(config());
    let ready = q.push_with("r", ts(0), keyed("ready")).unwrap();
    let delayed = q
        .push_with("d", ts(0), keyed("delayed").delay(ns(50)))
        .unwrap();
    let leased = q.push_with("l", ts(0), keyed("leased")).unwrap();
    // "r" is received first (pushed first), then "l": lease "l" only.
    let first = q.receive(ts(0)).unwrap();
    let second = q.receive(ts(0)).unwrap();
    assert_eq!((first.id, second.id), (ready, leased));
    q.nack(
        first.receipt,
        ts(0),
        Failure::error("again").retry_after(ns(0)),
    )
    .unwrap();
    for (key, holder) in [("ready", ready), ("delayed", delayed), ("leased", leased)] {
        match q.push_with("dup", ts(1), keyed(key).priority(7)) {
            Err(e @ PushError::DuplicateKey { .. }) => {
                assert_eq!(e.existing(), Some(holder), "{key}");
                assert!(e.to_string().contains(&holder.to_string()));
                assert_eq!(e.into_item(), "dup");
            }
            other => panic!("{key}: {other:?}"),
        }
        assert_eq!(q.key_holder(key), Some(holder));
    }
    let s = q.stats();
    assert_eq!((s.pushed, s.rejected, s.duplicates), (3, 3, 3));
    // Another key, or no key, is not affected.
    assert!(q.push_with("other", ts(1), keyed("other")).is_ok());
    assert!(q.push("plain", ts(1)).is_ok());
    ok(&q);
}

#[test]
fn keys_are_bytes_and_compare_exactly() {
    let mut q = queue(config());
    let a = q.push_with("a", ts(0), keyed("job:1")).unwrap();
    assert!(q.push_with("b", ts(0), keyed("job:1 ")).is_ok());
    assert!(q.push_with("c", ts(0), keyed("JOB:1")).is_ok());
    assert!(q.push_with("d", ts(0), PushOptions::new().key([])).is_ok());
    assert!(matches!(
        q.push_with("e", ts(0), PushOptions::new().key(b"job:1")),
        Err(PushError::DuplicateKey { existing, .. }) if existing == a
    ));
    let k = UniqueKey::new("job:1").unwrap();
    assert_eq!(q.items().find(|v| v.id == a).unwrap().key, Some(k));
    assert_eq!(q.key_holder([0u8; 65]), None, "longer than any key");
    ok(&q);
}

#[test]
fn the_key_is_held_across_redeliveries_and_backoff() {
    let mut q = queue(config().with_backoff(Backoff::Fixed(ns(5))));
    let id = q.push_with("a", ts(0), keyed("k")).unwrap();
    // Lease expiry at 10, backoff to 15: delayed, still held.
    let l = q.receive(ts(0)).unwrap();
    q.handle_timeout(ts(10));
    assert_eq!(q.stats().delayed, 1);
    assert!(matches!(
        q.push_with("b", ts(10), keyed("k")),
        Err(PushError::DuplicateKey { existing, .. }) if existing == id
    ));
    // Redelivered at 15: in flight again, still held.
    let again = q.receive(ts(15)).unwrap();
    assert_eq!((again.id, again.attempt), (id, 2));
    assert_eq!(q.key_holder("k"), Some(id));
    // The old holder's receipt is stale; the key stays with the item.
    assert_eq!(q.ack(l.receipt, ts(16)), Err(ReceiptError::Redelivered(id)));
    assert_eq!(q.key_holder("k"), Some(id));
    ok(&q);
}

#[test]
fn the_key_is_free_once_the_item_is_acked() {
    let mut q = queue(config());
    // On time.
    let id = q.push_with("a", ts(0), keyed("k")).unwrap();
    let l = q.receive(ts(0)).unwrap();
    q.ack(l.receipt, ts(9)).unwrap();
    assert_eq!(q.key_holder("k"), None);
    // Late but unclaimed: the ack at 20 frees the key; a push at 20 takes it.
    let id2 = q.push_with("b", ts(9), keyed("k")).unwrap();
    assert_ne!(id, id2);
    let l = q.receive(ts(9)).unwrap();
    assert_eq!(
        q.ack(l.receipt, ts(20)),
        Ok(Acked::LateUnclaimed { late_by: ns(1) })
    );
    let id3 = q.push_with("c", ts(20), keyed("k")).unwrap();
    assert_eq!(q.key_holder("k"), Some(id3));
    ok(&q);
}

#[test]
fn the_key_is_free_once_the_item_is_dead_lettered_and_the_letter_keeps_it() {
    let mut q = queue(config().with_max_attempts(1));
    // The last attempt runs out at 10.
    let spent = q.push_with("spent", ts(0), keyed("k1")).unwrap();
    q.receive(ts(0)).unwrap();
    // Expires at 5, waiting.
    let expired = q
        .push_with(
            "expired",
            ts(0),
            keyed("k2").delay(ns(20)).expires_at(ts(5)),
        )
        .unwrap();
    // Declared poison.
    let poison = q.push_with("poison", ts(0), keyed("k3")).unwrap();
    let l = q.receive(ts(1)).unwrap();
    q.dead_letter(l.receipt, ts(1), None).unwrap();
    assert_eq!(q.key_holder("k3"), None);
    q.handle_timeout(ts(10));
    for (id, key, reason) in [
        (spent, "k1", Reason::LeaseExpired),
        (expired, "k2", Reason::Expired),
        (poison, "k3", Reason::Rejected),
    ] {
        let d = q.get_dead_letter(id).unwrap();
        assert_eq!((d.reason, d.key), (reason, UniqueKey::new(key)));
        assert_eq!(q.key_holder(key), None, "{key} is free");
        assert!(q.push_with("new", ts(10), keyed(key)).is_ok());
    }
    ok(&q);
}

#[test]
fn a_redrive_is_refused_while_a_live_item_holds_the_key() {
    let mut q = queue(config().with_max_attempts(1));
    let old = q.push_with("old", ts(0), keyed("k").priority(3)).unwrap();
    let l = q.receive(ts(0)).unwrap();
    q.nack(l.receipt, ts(0), Failure::error("e")).unwrap();
    let holder = q.push_with("new", ts(1), keyed("k")).unwrap();
    assert_eq!(
        q.redrive(old, ts(2)),
        Err(RedriveError::KeyTaken { id: old, holder })
    );
    assert!(RedriveError::KeyTaken { id: old, holder }
        .to_string()
        .contains(&holder.to_string()));
    assert_eq!(q.redrive_all(ts(2)), 0, "redrive_all leaves it too");
    assert!(q.get_dead_letter(old).is_some(), "the dead letter stays");
    assert_eq!(q.stats().redriven, 0);
    // The holder is acked: the key is free, the redrive takes it with the letter's level.
    let l = q.receive(ts(3)).unwrap();
    assert_eq!(l.id, holder);
    q.ack(l.receipt, ts(3)).unwrap();
    assert_eq!(q.redrive(old, ts(4)), Ok(old));
    assert_eq!(q.key_holder("k"), Some(old));
    assert_eq!(q.ready_per_level()[3], 1);
    assert!(matches!(
        q.push_with("again", ts(4), keyed("k")),
        Err(PushError::DuplicateKey { existing, .. }) if existing == old
    ));
    ok(&q);
}

#[test]
fn redrive_all_takes_a_key_once_and_leaves_later_letters_with_it() {
    let mut q = queue(config().with_max_attempts(1));
    let mut ids = Vec::new();
    for item in ["a", "b"] {
        // Each is dead-lettered before the next is pushed, so both letters carry "k".
        let id = q.push_with(item, ts(0), keyed("k")).unwrap();
        let l = q.receive(ts(0)).unwrap();
        q.nack(l.receipt, ts(0), Failure::error("e")).unwrap();
        ids.push(id);
    }
    assert_eq!(q.redrive_all(ts(1)), 1);
    assert_eq!(q.key_holder("k"), Some(ids[0]));
    assert_eq!(
        q.redrive(ids[1], ts(1)),
        Err(RedriveError::KeyTaken {
            id: ids[1],
            holder: ids[0]
        })
    );
    ok(&q);
}

#[test]
fn replace_pending_replaces_a_ready_or_delayed_holder() {
    let mut q = queue(config());
    let ready = q.push_with("r1", ts(0), keyed("r").priority(1)).unwrap();
    let delayed = q.push_with("d1", ts(0), keyed("d").delay(ns(30))).unwrap();
    q.push_with("other", ts(0), PushOptions::new().priority(2))
        .unwrap();
    events(&mut q);
    let r2 = q
        .push_with("r2", ts(1), keyed("r").priority(3).replace_pending())
        .unwrap();
    // The replacement has its own delay: visible at 6, not at the old item's 30.
    let d2 = q
        .push_with("d2", ts(1), keyed("d").delay(ns(5)).replace_pending())
        .unwrap();
    assert!(r2 > delayed && d2 > r2, "new ids");
    assert_eq!(
        events(&mut q),
        [
            Event::Replaced { id: ready, by: r2 },
            Event::Replaced {
                id: delayed,
                by: d2
            }
        ]
    );
    let s = q.stats();
    assert_eq!(
        (s.pushed, s.cancelled, s.replaced, s.ready, s.delayed),
        (5, 2, 2, 2, 1)
    );
    assert_eq!((q.key_holder("r"), q.key_holder("d")), (Some(r2), Some(d2)));
    // The replacement's level: 3 before "other" at 2.
    assert_eq!(drain(&mut q, ts(1)), ["r2", "other"]);
    assert_eq!(q.poll_timeout(), Some(ts(6)), "the old delay to 30 is gone");
    assert_eq!(drain(&mut q, ts(6)), ["d2"]);
    assert_eq!(q.poll_timeout(), None);
    assert!(q.get_dead_letter(ready).is_none());
    ok(&q);
}

#[test]
fn replace_pending_never_replaces_an_item_in_flight() {
    let mut q = queue(config());
    let id = q.push_with("a", ts(0), keyed("k")).unwrap();
    let l = q.receive(ts(0)).unwrap();
    assert!(matches!(
        q.push_with("b", ts(1), keyed("k").replace_pending()),
        Err(PushError::DuplicateKey { existing, item: "b" }) if existing == id
    ));
    assert_eq!((q.stats().replaced, q.stats().duplicates), (0, 1));
    assert_eq!(q.ack(l.receipt, ts(2)), Ok(Acked::OnTime));
    // Without a key, replace_pending does nothing.
    assert!(q
        .push_with("c", ts(2), PushOptions::new().replace_pending())
        .is_ok());
    ok(&q);
}

#[test]
fn a_replaced_items_old_receipt_is_cancelled() {
    let mut q = queue(config());
    let id = q.push_with("a", ts(0), keyed("k")).unwrap();
    // Leased, then handed back: ready again, its old receipt released.
    let l = q.receive(ts(0)).unwrap();
    q.release(l.receipt, ts(1)).unwrap();
    q.push_with("b", ts(2), keyed("k").replace_pending())
        .unwrap();
    assert_eq!(q.ack(l.receipt, ts(3)), Err(ReceiptError::Cancelled(id)));
    ok(&q);
}

#[test]
fn push_take_hands_out_the_replaced_item() {
    let mut q: Queue<String> = Queue::new(config()).unwrap();
    let old = q
        .push_with("old".to_string(), ts(0), PushOptions::new().key("k"))
        .unwrap();
    let p = q
        .push_take(
            "new".to_string(),
            ts(0),
            PushOptions::new().key("k").replace_pending(),
        )
        .unwrap();
    assert_eq!(p.replaced, Some((old, "old".to_string())));
    let p2 = q
        .push_with_id_take(
            MessageId::new(10),
            "newer".to_string(),
            ts(0),
            PushOptions::new().key("k").replace_pending(),
        )
        .unwrap();
    assert_eq!(p2.id, MessageId::new(10));
    assert_eq!(p2.replaced, Some((p.id, "new".to_string())));
    let plain = q
        .push_take("x".to_string(), ts(0), PushOptions::new())
        .unwrap();
    assert_eq!(plain.replaced, None);
    ok(&q);
}

#[test]
fn a_replacement_at_capacity_takes_the_place_it_frees() {
    let mut q = queue(config().with_capacity(1));
    q.push_with("a", ts(0), keyed("k")).unwrap();
    assert!(matches!(
        q.push_with("x", ts(0), keyed("other")),
        Err(PushError::Full("x"))
    ));
    let b = q
        .push_with("b", ts(0), keyed("k").replace_pending())
        .unwrap();
    assert_eq!((q.len(), q.key_holder("k")), (1, Some(b)));
    ok(&q);
}

#[test]
fn a_refused_keyed_push_with_id_does_not_use_up_the_id() {
    let mut q = queue(config());
    q.push_with("a", ts(0), keyed("k")).unwrap();
    assert!(matches!(
        q.push_with_id(MessageId::new(5), "b", ts(0), keyed("k")),
        Err(PushError::DuplicateKey { .. })
    ));
    assert_eq!(q.next_id(), MessageId::new(1));
    ok(&q);
}
