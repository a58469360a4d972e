//! One test per rule of priority levels (crate docs: "Order"), at exact instants
//! (virtual time, nanoseconds). Unique keys are in `unique_keys.rs`, cancel in `cancel.rs`.

use leaseq_core::{
    Backoff, Failure, ItemState, Nacked, PushOptions, MAX_PRIORITY, PRIORITY_LEVELS,
};

use leaseq_test_kit::core_queue::{at, config, drain, ok, queue};
use leaseq_test_kit::time::{ns, ts};

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
