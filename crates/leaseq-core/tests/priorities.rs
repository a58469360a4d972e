//! One test per rule of priorities, unique keys and cancel (crate docs: "Order", "Unique
//! keys", "Cancel"), at exact instants (virtual time, nanoseconds).

use std::time::Duration;

use leaseq_core::{
    Acked, Backoff, CancelError, Config, Event, EventMask, Failure, ItemState, LateAckKind,
    MessageId, Nacked, PushError, PushOptions, Queue, Reason, ReceiptError, RedriveError,
    Timestamp, UniqueKey, MAX_PRIORITY, PRIORITY_LEVELS,
};

use leaseq_test_kit::core_queue::{config, events, leased, ok, queue};
use leaseq_test_kit::time::{ns, ts};

fn at(level: u8) -> PushOptions {
    PushOptions::new().priority(level)
}

fn keyed(key: &str) -> PushOptions {
    PushOptions::new().key(key)
}

/// Receives everything visible at `now`, acking each, and returns the items in order.
fn drain(q: &mut Queue<&'static str>, now: Timestamp) -> Vec<&'static str> {
    let mut got = Vec::new();
    while let Some(l) = q.receive(now) {
        got.push(l.item);
        q.ack(l.receipt, now).unwrap();
    }
    got
}

// ----- priority levels ------------------------------------------------------------------

#[test]
fn levels_are_0_to_7_and_0_is_the_default() {
    assert_eq!((PRIORITY_LEVELS, MAX_PRIORITY), (8, 7));
    assert_eq!(PushOptions::new().priority, 0);
    assert_eq!(PushOptions::default(), PushOptions::new());
    let mut q = queue(config());
    let a = q.push("plain", ts(0)).unwrap();
    let b = q.push_with("seven", ts(0), at(7)).unwrap();
    let levels: Vec<_> = q.items().map(|v| (v.id, v.priority)).collect();
    assert_eq!(levels, [(a, 0), (b, 7)]);
}

#[test]
fn a_higher_level_is_delivered_first_then_fifo_within_a_level() {
    let mut q = queue(config());
    for (item, level) in [
        ("0a", 0),
        ("3a", 3),
        ("7a", 7),
        ("3b", 3),
        ("0b", 0),
        ("7b", 7),
    ] {
        q.push_with(item, ts(0), at(level)).unwrap();
    }
    assert_eq!(q.ready_per_level(), [2, 0, 0, 2, 0, 0, 0, 2]);
    assert_eq!(drain(&mut q, ts(0)), ["7a", "7b", "3a", "3b", "0a", "0b"]);
    assert_eq!(q.ready_per_level(), [0; 8]);
    ok(&q);
}

#[test]
fn within_a_level_order_is_by_visibility_time_with_ties_in_push_order() {
    let mut q = queue(config());
    // Pushed in this order; visible at 5, 3, 5, 0 (the last: at once, but at time 5).
    q.push_with("d5-first", ts(0), at(2).delay(ns(5))).unwrap();
    q.push_with("d3", ts(0), at(2).delay(ns(3))).unwrap();
    q.push_with("d5-second", ts(0), at(2).delay(ns(5))).unwrap();
    q.push_with("low", ts(0), at(1)).unwrap();
    q.push_with("now-at-5", ts(5), at(2)).unwrap();
    // Everything that became visible by itself at 5 comes before the call's own item.
    assert_eq!(
        drain(&mut q, ts(5)),
        ["d3", "d5-first", "d5-second", "now-at-5", "low"]
    );
    ok(&q);
}

#[test]
fn a_delayed_high_level_item_overtakes_older_low_level_ones_once_visible() {
    let mut q = queue(config());
    q.push_with("low-1", ts(0), at(0)).unwrap();
    q.push_with("low-2", ts(0), at(0)).unwrap();
    q.push_with("high", ts(0), at(6).delay(ns(5))).unwrap();
    let l = q.receive(ts(4)).unwrap();
    assert_eq!(l.item, "low-1", "not visible yet at 4");
    q.ack(l.receipt, ts(4)).unwrap();
    assert_eq!(q.receive(ts(5)).unwrap().item, "high", "visible at 5");
    assert_eq!(q.receive(ts(5)).unwrap().item, "low-2");
    ok(&q);
}

#[test]
fn strict_priority_a_lower_level_waits_while_a_higher_one_has_visible_items() {
    let mut q = queue(config().with_max_attempts(100));
    q.push_with("background", ts(0), at(0)).unwrap();
    // A level-5 stream that is always visible: the level-0 item is never served.
    q.push_with("urgent", ts(0), at(5)).unwrap();
    for t in 0..50 {
        let l = q.receive(ts(t)).unwrap();
        assert_eq!(l.item, "urgent");
        q.ack(l.receipt, ts(t)).unwrap();
        q.push_with("urgent", ts(t), at(5)).unwrap();
        assert_eq!(q.ready_per_level()[0], 1, "the backlog shows at level 0");
    }
    let l = q.receive(ts(50)).unwrap();
    q.ack(l.receipt, ts(50)).unwrap();
    assert_eq!(
        q.receive(ts(50)).unwrap().item,
        "background",
        "served once level 5 is empty"
    );
    ok(&q);
}

#[test]
fn redeliveries_keep_their_level() {
    let mut q = queue(config().with_backoff(Backoff::Fixed(ns(4))));
    let id = q.push_with("five", ts(0), at(5)).unwrap();
    q.push_with("older-low", ts(0), at(1)).unwrap();
    // The lease runs out at 10: back at level 5, ahead of the older level-1 item.
    let l = q.receive(ts(0)).unwrap();
    assert_eq!((l.id, l.deadline), (id, ts(10)));
    q.handle_timeout(ts(10));
    assert_eq!(q.ready_per_level()[5], 0, "waits out the backoff");
    q.handle_timeout(ts(14));
    assert_eq!(q.ready_per_level()[5], 1);
    let l = q.receive(ts(14)).unwrap();
    assert_eq!((l.id, l.attempt), (id, 2));
    // A nack: back at level 5 again.
    assert_eq!(
        q.nack(l.receipt, ts(15), Failure::error("e").retry_after(ns(0))),
        Ok(Nacked::Retrying {
            visible_at: ts(15),
            attempts: 2
        })
    );
    let view = q.items().find(|v| v.id == id).unwrap();
    assert_eq!((view.priority, view.state), (5, ItemState::Ready));
    assert_eq!(q.receive(ts(15)).unwrap().id, id);
    ok(&q);
}

#[test]
fn a_dead_letter_keeps_its_level_and_a_redrive_restores_it() {
    let mut q = queue(config().with_max_attempts(1));
    let id = q.push_with("poison", ts(0), at(4)).unwrap();
    let l = q.receive(ts(0)).unwrap();
    q.nack(l.receipt, ts(1), Failure::error("bad")).unwrap();
    let d = q.get_dead_letter(id).unwrap();
    assert_eq!((d.priority, d.key), (4, None));
    q.push_with("low", ts(2), at(0)).unwrap();
    assert_eq!(q.redrive(id, ts(3)), Ok(id));
    assert_eq!(q.ready_per_level(), [1, 0, 0, 0, 1, 0, 0, 0]);
    assert_eq!(q.receive(ts(3)).unwrap().id, id, "level 4 first");
    ok(&q);
}

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
