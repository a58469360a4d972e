//! Ordered groups (`FlowKeys::group`): a group's items go strictly in push order, one at a
//! time; groups take turns; a dead letter releases its group (or, with
//! `GroupDeadLetter::Block`, holds it until redriven or purged) and a redrive puts the item
//! back at its place. Unit cases, then property tests over random streams.

use std::collections::BTreeMap;
use std::time::Duration;

use leaseq_core::{
    Backoff, Config, Failure, FlowKey, FlowKeys, GroupDeadLetter, ItemState, PushOptions, Queue,
};
use leaseq_test_kit::time::at_ms as ts;
use proptest::prelude::*;

fn queue(max_attempts: u32) -> Queue<u32> {
    queue_with(max_attempts, GroupDeadLetter::Release)
}

fn queue_with(max_attempts: u32, dead: GroupDeadLetter) -> Queue<u32> {
    let config = Config::new(Duration::from_millis(10))
        .with_backoff(Backoff::None)
        .with_max_attempts(max_attempts)
        .group_dead_letter(dead);
    Queue::new(config).unwrap()
}

fn group(g: u64) -> FlowKeys {
    FlowKeys::new().group(FlowKey::new(g))
}

fn push(q: &mut Queue<u32>, item: u32, g: u64) {
    q.push_flow(item, ts(0), PushOptions::new(), group(g))
        .unwrap();
}

/// One worker, a big group A pushed first and a small group B after: they alternate once
/// both have items ready (A's next item becomes eligible only when its previous one is
/// done, and then waits behind B's).
#[test]
fn groups_take_turns_and_each_goes_in_push_order() {
    let mut q = queue(5);
    for n in 0..4 {
        push(&mut q, n, 1);
    }
    push(&mut q, 10, 2);
    push(&mut q, 11, 2);
    let mut order = Vec::new();
    while let Some(lease) = q.receive(ts(0)) {
        assert!(
            q.receive(ts(0)).is_some_and(|other| {
                // At most one per group in flight: the other lease is of the other group.
                let ok = (other.item < 10) != (lease.item < 10);
                q.put_back(other.receipt, ts(0)).unwrap();
                ok
            }) || q.stats().ready == 0
                || q.waiting_on_limits() == q.stats().ready
        );
        order.push(lease.item);
        q.ack(lease.receipt, ts(0)).unwrap();
        q.check_invariants().unwrap();
    }
    assert_eq!(order, [0, 10, 1, 11, 2, 3]);
}

/// A failed head keeps its group waiting through its backoff; a dead letter releases the
/// group; a redrive puts the item back at its place, where it is the head again.
#[test]
fn a_dead_letter_releases_its_group_and_a_redrive_takes_its_place_back() {
    let mut q = queue(2);
    for n in 0..3 {
        push(&mut q, n, 1);
    }
    let first = q.receive(ts(0)).unwrap();
    assert!(q.receive(ts(0)).is_none(), "one at a time");
    q.nack(
        first.receipt,
        ts(0),
        Failure::error("e").retry_after(Duration::from_millis(5)),
    )
    .unwrap();
    assert!(
        q.receive(ts(1)).is_none(),
        "the group waits for its head's backoff"
    );
    let again = q.receive(ts(5)).unwrap();
    assert_eq!((again.item, again.attempt), (0, 2));
    q.nack(again.receipt, ts(5), Failure::error("e")).unwrap();
    assert_eq!(q.stats().dead, 1);
    let second = q.receive(ts(5)).unwrap();
    assert_eq!(second.item, 1, "the dead letter released the group");
    q.ack(second.receipt, ts(5)).unwrap();
    q.redrive(first.id, ts(5)).unwrap();
    assert_eq!(
        q.receive(ts(5)).unwrap().item,
        0,
        "back at its place: the head"
    );
    assert!(q.receive(ts(5)).is_none());
    q.check_invariants().unwrap();
}

/// `Block`: a dead letter holds its group (the next item waits, counted as held by its
/// group) until it is redriven, the head again; a purge of a dead letter lets the next go.
#[test]
fn a_blocking_dead_letter_holds_its_group_until_redriven_or_purged() {
    let mut q = queue_with(1, GroupDeadLetter::Block);
    for n in 0..3 {
        push(&mut q, n, 1);
    }
    push(&mut q, 10, 2);
    let first = q.receive(ts(0)).unwrap();
    assert_eq!(first.item, 0);
    q.nack(first.receipt, ts(0), Failure::error("e")).unwrap();
    assert_eq!(q.stats().dead, 1);
    let other = q.receive(ts(0)).unwrap();
    assert_eq!(other.item, 10, "other groups go on");
    assert!(
        q.receive(ts(0)).is_none(),
        "group 1 waits for its dead letter"
    );
    assert_eq!(q.waiting_on_groups(), 2);
    q.check_invariants().unwrap();
    q.redrive(first.id, ts(1)).unwrap();
    let again = q.receive(ts(1)).unwrap();
    assert_eq!(again.item, 0, "the head again");
    q.dead_letter(again.receipt, ts(1), None).unwrap();
    assert!(q.receive(ts(1)).is_none());
    q.take_dead_letter(first.id).unwrap();
    q.check_invariants().unwrap();
    let next = q.receive(ts(1)).unwrap();
    assert_eq!(next.item, 1, "the purge let the next go");
    q.check_invariants().unwrap();
}

/// The choice is kept in a serialized config, and a config serialized before it existed
/// reads as `Release`.
#[test]
fn the_choice_is_a_config_field_with_release_by_default() {
    let c = Config::new(Duration::from_secs(1));
    assert_eq!(c.group_dead_letter_choice(), GroupDeadLetter::Release);
    let b = c.clone().group_dead_letter(GroupDeadLetter::Block);
    assert_eq!(b.group_dead_letter_choice(), GroupDeadLetter::Block);
    #[cfg(feature = "serde")]
    {
        let json = serde_json::to_string(&b).unwrap();
        assert!(json.contains("\"group_dead_letter\":\"Block\""), "{json}");
        let back: Config = serde_json::from_str(&json).unwrap();
        assert_eq!(back, b);
        let old = json.replace(",\"group_dead_letter\":\"Block\"", "");
        let old: Config = serde_json::from_str(&old).unwrap();
        assert_eq!(old.group_dead_letter_choice(), GroupDeadLetter::Release);
    }
}

#[derive(Clone, Debug)]
enum Op {
    Push(Option<u64>, u8, u64),
    Receive,
    Settle(usize, u8),
    Redrive(usize),
    Purge(usize),
    Wait(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (proptest::option::of(0..3u64), 0..3u8, 0..3u64).prop_map(|(g, l, d)| Op::Push(g, l, d)),
        5 => Just(Op::Receive),
        4 => (any::<usize>(), 0..6u8).prop_map(|(i, how)| Op::Settle(i, how)),
        1 => any::<usize>().prop_map(Op::Redrive),
        1 => any::<usize>().prop_map(Op::Purge),
        1 => (0..12u64).prop_map(Op::Wait),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Fairness: one receiver acking each item at once, over groups pushed in any
    /// interleaving (ungrouped items among them): between two deliveries of a group, at
    /// most one delivery of each other group, so a large group cannot starve a small one.
    #[test]
    fn groups_take_turns_within_a_bound(
        pushes in proptest::collection::vec(proptest::option::of(0..5u64), 1..60),
    ) {
        let mut q = queue(5);
        let mut groups: BTreeMap<u64, u64> = BTreeMap::new();
        for g in pushes {
            let id = q.push_flow(0, ts(0), PushOptions::new(), g.map_or(FlowKeys::new(), group));
            if let Some(g) = g {
                groups.insert(id.unwrap().get(), g);
            }
        }
        // Every group waits from the start.
        let mut since: BTreeMap<u64, BTreeMap<u64, u32>> =
            groups.values().map(|&g| (g, BTreeMap::new())).collect();
        while let Some(lease) = q.receive(ts(0)) {
            if let Some(&g) = groups.get(&lease.id.get()) {
                for (&other, seen) in since.iter_mut() {
                    if other != g {
                        *seen.entry(g).or_default() += 1;
                        prop_assert!(seen[&g] <= 1, "group {} served twice while {} waited", g, other);
                    }
                }
                since.insert(g, BTreeMap::new());
            }
            q.ack(lease.receipt, ts(0)).unwrap();
            // A group with nothing left no longer waits.
            since.retain(|g, _| groups.iter().any(|(id, gg)| gg == g && q.items().any(|v| v.id.get() == *id)));
        }
        prop_assert!(q.is_empty());
    }

    /// Whenever an item of a group is leased, no other item of its group is in flight and
    /// no live item of its group was pushed before it (redriven items keep their place),
    /// nor, with `Block`, a dead letter of its group; a receive that leases nothing leaves
    /// only held-back items ready.
    #[test]
    fn a_group_goes_in_push_order_one_at_a_time(
        ops in proptest::collection::vec(op(), 1..150),
        block in any::<bool>(),
    ) {
        let mode = if block { GroupDeadLetter::Block } else { GroupDeadLetter::Release };
        let mut q = queue_with(2, mode);
        let mut t = 0;
        let mut groups: BTreeMap<u64, u64> = BTreeMap::new();
        let mut held = Vec::new();
        for op in ops {
            match op {
                Op::Push(g, level, delay) => {
                    let keys = g.map_or(FlowKeys::new(), group);
                    let o = PushOptions::new().priority(level).delay(Duration::from_millis(delay));
                    let id = q.push_flow(0, ts(t), o, keys).unwrap();
                    if let Some(g) = g {
                        groups.insert(id.get(), g);
                    }
                }
                Op::Receive => match q.receive(ts(t)) {
                    Some(lease) => {
                        if let Some(&g) = groups.get(&lease.id.get()) {
                            for v in q.items() {
                                if v.id == lease.id || groups.get(&v.id.get()) != Some(&g) {
                                    continue;
                                }
                                prop_assert!(v.id > lease.id, "{:?} before {:?}", v.id, lease.id);
                                let in_flight = matches!(v.state, ItemState::InFlight { .. });
                                prop_assert!(!in_flight, "two of a group in flight");
                            }
                            for d in q.dead_letters().filter(|_| block) {
                                if groups.get(&d.id.get()) == Some(&g) {
                                    prop_assert!(d.id > lease.id, "past dead letter {:?}", d.id);
                                }
                            }
                        }
                        held.push(lease);
                    }
                    None => prop_assert_eq!(q.waiting_on_limits(), q.stats().ready),
                },
                Op::Settle(i, how) if !held.is_empty() => {
                    let lease: leaseq_core::Lease<u32> = held.swap_remove(i % held.len());
                    let (r, now) = (lease.receipt, ts(t));
                    let _ = match how {
                        0 | 1 => q.ack(r, now).map(|_| ()),
                        2 => q.nack(r, now, Failure::error("e")).map(|_| ()),
                        3 => q.put_back(r, now),
                        4 => q.snooze(r, now, Duration::from_millis(2)).map(|_| ()),
                        _ => q.dead_letter(r, now, None).map(|_| ()),
                    };
                }
                Op::Redrive(i) => {
                    let dead: Vec<_> = q.dead_letters().map(|d| d.id).collect();
                    if !dead.is_empty() {
                        let _ = q.redrive(dead[i % dead.len()], ts(t));
                    }
                }
                Op::Purge(i) => {
                    let dead: Vec<_> = q.dead_letters().map(|d| d.id).collect();
                    if !dead.is_empty() {
                        q.take_dead_letter(dead[i % dead.len()]);
                    }
                }
                Op::Wait(ms) => {
                    t += ms;
                    q.handle_timeout(ts(t));
                }
                _ => {}
            }
            prop_assert!(q.check_invariants().is_ok(), "{:?}", q.check_invariants());
        }
    }
}
