//! Concurrency limits (`Queue::set_limit`): per queue, per kind and per partition. Unit
//! cases, then a property test over random streams with limits changed at runtime: no
//! lease is ever handed out beyond a limit, a receive that finds nothing leaves only held
//! back items ready, and the counts match the items in flight at every step.

use std::collections::BTreeMap;
use std::time::Duration;

use leaseq_core::{
    Backoff, Config, Failure, FlowKey, FlowKeys, LimitScope, MessageId, PushOptions, Queue,
};
use leaseq_test_kit::core_queue::settle_by;
use leaseq_test_kit::scopes::{scope, scopes};
use leaseq_test_kit::time::at_ms as ts;
use proptest::prelude::*;

fn queue() -> Queue<u32> {
    let config = Config::new(Duration::from_millis(10)).with_backoff(Backoff::None);
    Queue::new(config).unwrap()
}

fn kind(k: u64) -> FlowKeys {
    FlowKeys::new().kind(FlowKey::new(k))
}

fn plain() -> PushOptions {
    PushOptions::new()
}

#[test]
fn a_kind_limit_holds_its_items_back_and_lets_the_others_pass() {
    let mut q = queue();
    q.set_limit(LimitScope::Kind(FlowKey::new(1)), Some(2));
    for i in 0..4 {
        q.push_flow(i, ts(0), plain(), kind(1)).unwrap();
    }
    q.push_flow(10, ts(0), plain(), kind(2)).unwrap();
    q.push(20, ts(0)).unwrap();
    let got: Vec<u32> = std::iter::from_fn(|| q.receive(ts(0)).map(|l| l.item)).collect();
    assert_eq!(got, [0, 1, 10, 20]);
    let s = q.stats();
    assert_eq!((s.ready, q.waiting_on_limits(), s.in_flight), (2, 2, 4));
    assert_eq!(q.in_flight_of(LimitScope::Kind(FlowKey::new(1))), 2);
    q.check_invariants().unwrap();
}

#[test]
fn every_way_out_of_flight_frees_a_place() {
    let mut q = queue();
    let k = LimitScope::Kind(FlowKey::new(1));
    q.set_limit(k, Some(1));
    for i in 0..6 {
        q.push_flow(i, ts(0), plain(), kind(1)).unwrap();
    }
    let mut t = 0;
    for way in 0..6 {
        let lease = q.receive(ts(t)).unwrap();
        assert!(q.receive(ts(t)).is_none());
        match way {
            0 => _ = q.ack(lease.receipt, ts(t)).unwrap(),
            1 => _ = q.nack(lease.receipt, ts(t), Failure::error("e")).unwrap(),
            2 => _ = q.release(lease.receipt, ts(t)).unwrap(),
            3 => q.put_back(lease.receipt, ts(t)).unwrap(),
            4 => _ = q.snooze(lease.receipt, ts(t), Duration::ZERO).unwrap(),
            _ => t += 10, // the lease runs out
        }
        q.handle_timeout(ts(t));
        assert_eq!(q.in_flight_of(k), 0, "way {way}");
        q.check_invariants().unwrap();
    }
}

#[test]
fn the_queue_limit_and_partitions_and_runtime_changes() {
    let mut q = queue();
    let (a, b) = (FlowKey::named("acme"), FlowKey::named("bolt"));
    for i in 0..3 {
        q.push_flow(i, ts(0), plain(), FlowKeys::new().partition(a))
            .unwrap();
        q.push_flow(10 + i, ts(0), plain(), FlowKeys::new().partition(b))
            .unwrap();
    }
    q.set_limit(LimitScope::Queue, Some(3));
    q.set_limit(LimitScope::Partition(a), Some(1));
    let mut held = Vec::new();
    q.receive_many(ts(0), 10, &mut held);
    let items: Vec<u32> = held.iter().map(|l| l.item).collect();
    assert_eq!(items, [0, 10, 11]);
    assert_eq!(q.waiting_on_limits(), 3);
    // Raised at runtime: takes effect at the next receive.
    q.set_limit(LimitScope::Queue, None);
    q.set_limit(LimitScope::Partition(a), Some(2));
    assert_eq!(q.receive(ts(0)).unwrap().item, 1);
    assert_eq!(q.receive(ts(0)).unwrap().item, 12);
    assert!(q.receive(ts(0)).is_none());
    // Lowered below what is in flight: nothing taken back, nothing more leased.
    q.set_limit(LimitScope::Partition(a), Some(0));
    assert_eq!(q.limit(LimitScope::Partition(a)), Some(0));
    for lease in held.drain(..) {
        q.ack(lease.receipt, ts(0)).unwrap();
    }
    assert!(q.receive(ts(0)).is_none());
    assert_eq!(q.waiting_on_limits(), 1);
    q.set_limit(LimitScope::Partition(a), None);
    assert_eq!(q.receive(ts(0)).unwrap().item, 2);
    q.check_invariants().unwrap();
}

#[test]
fn a_dead_letter_keeps_its_keys_through_a_redrive_and_levels_go_first() {
    let config = Config::new(Duration::from_millis(10)).with_max_attempts(1);
    let mut q: Queue<u32> = Queue::new(config).unwrap();
    let k = LimitScope::Kind(FlowKey::new(1));
    q.set_limit(k, Some(1));
    let id = q.push_flow(1, ts(0), plain(), kind(1)).unwrap();
    let lease = q.receive(ts(0)).unwrap();
    q.dead_letter(lease.receipt, ts(0), None).unwrap();
    q.push_flow(2, ts(0), plain().priority(3), kind(1)).unwrap();
    q.push_flow(3, ts(0), plain().priority(5).key("k"), kind(1))
        .unwrap();
    q.redrive(id, ts(0)).unwrap();
    assert_eq!(q.receive(ts(0)).unwrap().item, 3);
    assert!(q.receive(ts(0)).is_none());
    assert_eq!(q.waiting_on_limits(), 2);
    q.check_invariants().unwrap();
    let _ = MessageId::new(0);
}

#[derive(Clone, Debug)]
enum Op {
    Push {
        kind: Option<u64>,
        part: Option<u64>,
        level: u8,
        key: Option<u8>,
    },
    Receive,
    ReceiveMany(usize),
    Settle(usize, u8),
    Limit(u8, u64, Option<u32>),
    Wait(u64),
}

fn op() -> impl Strategy<Value = Op> {
    let key = proptest::option::of(0..3u64);
    prop_oneof![
        4 => (key.clone(), key, 0..3u8, proptest::option::of(0..3u8))
            .prop_map(|(kind, part, level, key)| Op::Push { kind, part, level, key }),
        4 => Just(Op::Receive),
        1 => (1..5usize).prop_map(Op::ReceiveMany),
        4 => (any::<usize>(), 0..5u8).prop_map(|(i, how)| Op::Settle(i, how)),
        2 => (0..3u8, 0..3u64, proptest::option::of(0..3u32)).prop_map(|(s, k, m)| Op::Limit(s, k, m)),
        1 => (0..12u64).prop_map(Op::Wait),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// No lease beyond a limit at any `now`, whatever the settles, expiries and limit
    /// changes; a receive that leases nothing leaves only items a limit holds back; the
    /// per-scope counts equal the leases in flight (recounted here from the leases held).
    #[test]
    fn no_limit_is_exceeded_and_nothing_waits_for_no_reason(
        ops in proptest::collection::vec(op(), 1..150),
    ) {
        let mut q = queue();
        let mut t = 0;
        let mut tags: BTreeMap<u64, (Option<u64>, Option<u64>)> = BTreeMap::new();
        let mut held = Vec::new();
        for op in ops {
            let mut leased = Vec::new();
            match op {
                Op::Push { kind, part, level, key } => {
                    let mut keys = FlowKeys::new();
                    if let Some(k) = kind { keys = keys.kind(FlowKey::new(k)); }
                    if let Some(p) = part { keys = keys.partition(FlowKey::new(p)); }
                    let mut o = PushOptions::new().priority(level);
                    if let Some(k) = key {
                        // A replacement: the new item takes the replaced one's slot.
                        o = o.key([k]).replace_pending();
                    }
                    if let Ok(id) = q.push_flow(0, ts(t), o, keys) {
                        tags.insert(id.get(), (kind, part));
                    }
                }
                Op::Receive => {
                    match q.receive(ts(t)) {
                        Some(lease) => leased.push(lease),
                        None => {
                            let s = q.stats();
                            prop_assert_eq!(q.waiting_on_limits(), s.ready);
                        }
                    }
                }
                Op::ReceiveMany(n) => {
                    let got = q.receive_many(ts(t), n, &mut leased);
                    if got < n {
                        let s = q.stats();
                        prop_assert_eq!(q.waiting_on_limits(), s.ready);
                    }
                }
                Op::Settle(i, how) if !held.is_empty() => {
                    let lease: leaseq_core::Lease<u32> = held.swap_remove(i % held.len());
                    let (r, now) = (lease.receipt, ts(t));
                    settle_by(&mut q, r, now, how);
                }
                Op::Limit(s, k, max) => q.set_limit(scope(s, k), max),
                Op::Wait(ms) => {
                    t += ms;
                    q.handle_timeout(ts(t));
                }
                _ => {}
            }
            // Each lease just handed out: within every limit of its scopes, counting it.
            for lease in &leased {
                for sc in scopes(tags[&lease.id.get()]) {
                    if let Some(max) = q.limit(sc) {
                        prop_assert!(q.in_flight_of(sc) <= u64::from(max), "{:?}", sc);
                    }
                }
            }
            held.extend(leased);
            // Leases that ran out are no longer counted: drop them from the ledger.
            held.retain(|l| q.items().any(|v| v.id == l.id
                && matches!(v.state, leaseq_core::ItemState::InFlight { deadline } if deadline == l.deadline)));
            let mut count: BTreeMap<LimitScope, u64> = BTreeMap::new();
            for lease in &held {
                for sc in scopes(tags[&lease.id.get()]) {
                    *count.entry(sc).or_default() += 1;
                }
            }
            for s in 0..3 {
                for k in 0..3 {
                    let sc = scope(s, k);
                    prop_assert_eq!(q.in_flight_of(sc), count.get(&sc).copied().unwrap_or(0));
                }
            }
            prop_assert!(q.check_invariants().is_ok(), "{:?}", q.check_invariants());
        }
    }
}
