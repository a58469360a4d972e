//! Rate limits (`Queue::set_rate`): per queue, per kind and per partition, by GCRA. Unit
//! cases (the burst, the wake instant, runtime changes, the walk past held items), then a
//! seeded property test over random streams with rates changed at runtime and a clock
//! that steps back: no limit's leases ever closer together than its rate allows, in the
//! queue's time; a receive that finds nothing while items wait on a rate names the exact
//! instant the next one may start; and everything is leased in the end (no lock-out).

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::time::Duration;

use leaseq_core::{
    Backoff, Config, FlowKey, FlowKeys, LimitScope, PushOptions, Queue, Rate, Timestamp,
};
use leaseq_test_kit::core_queue::settle_by;
use leaseq_test_kit::scopes::{scope, scopes};
use leaseq_test_kit::seeded::seed_config;
use leaseq_test_kit::time::at_ms as ts;
use proptest::prelude::*;

fn queue() -> Queue<u32> {
    let config = Config::new(Duration::from_secs(60)).with_backoff(Backoff::None);
    Queue::new(config).unwrap()
}

fn nz(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).unwrap()
}

fn part(p: u64) -> FlowKeys {
    FlowKeys::new().partition(FlowKey::new(p))
}

#[test]
fn a_burst_of_max_then_one_per_interval() {
    let mut q = queue();
    q.set_rate(
        LimitScope::Queue,
        Some(Rate::per(nz(3), Duration::from_millis(30))),
        ts(0),
    );
    for i in 0..10 {
        q.push(i, ts(0)).unwrap();
    }
    let burst: Vec<u32> = std::iter::from_fn(|| q.receive(ts(0)).map(|l| l.item)).collect();
    assert_eq!(burst, [0, 1, 2]);
    assert_eq!(q.waiting_on_rates(), 7);
    // The bucket refills one lease every 10 ms.
    assert_eq!(q.poll_timeout(), Some(ts(10)));
    assert!(q.receive(ts(9)).is_none());
    assert_eq!(q.receive(ts(10)).unwrap().item, 3);
    assert!(q.receive(ts(10)).is_none());
    assert_eq!(q.poll_timeout(), Some(ts(20)));
    // After a quiet spell the burst is back, never more.
    let later: Vec<u32> = std::iter::from_fn(|| q.receive(ts(500)).map(|l| l.item)).collect();
    assert_eq!(later, [4, 5, 6]);
    q.check_invariants().unwrap();
}

#[test]
fn a_partition_rate_holds_its_items_and_lets_the_others_pass() {
    let mut q = queue();
    let slow = LimitScope::Partition(FlowKey::new(1));
    q.set_rate(slow, Some(Rate::per_second(nz(1))), ts(0));
    for i in 0..3 {
        q.push_flow(i, ts(0), PushOptions::new(), part(1)).unwrap();
    }
    q.push_flow(10, ts(0), PushOptions::new(), part(2)).unwrap();
    q.push(20, ts(0)).unwrap();
    let got: Vec<u32> = std::iter::from_fn(|| q.receive(ts(0)).map(|l| l.item)).collect();
    assert_eq!(got, [0, 10, 20]);
    assert_eq!((q.stats().ready, q.waiting_on_rates()), (2, 2));
    assert_eq!(q.waiting_on_limits(), 0);
    // The fetcher's wake is the eligible instant, exactly: not a nanosecond before.
    let at = q.poll_timeout().unwrap();
    assert_eq!(at, ts(1000));
    let just_before = Timestamp::from_nanos(at.as_nanos() - 1);
    q.handle_timeout(just_before);
    assert_eq!(q.rate_wakes(), 0);
    assert!(q.receive(just_before).is_none());
    q.handle_timeout(at);
    assert_eq!(q.rate_wakes(), 1);
    assert_eq!(q.receive(at).unwrap().item, 1);
    assert_eq!(q.rate(slow), Some(Rate::per_second(nz(1))));
    q.check_invariants().unwrap();
}

#[test]
fn a_rate_changed_at_runtime_takes_effect_at_once() {
    let mut q = queue();
    let k = LimitScope::Kind(FlowKey::new(7));
    let keys = FlowKeys::new().kind(FlowKey::new(7));
    q.set_rate(k, Some(Rate::per_second(nz(1)).burst(nz(1))), ts(0));
    for i in 0..6 {
        q.push_flow(i, ts(0), PushOptions::new(), keys).unwrap();
    }
    assert!(q.receive(ts(0)).is_some());
    assert!(q.receive(ts(0)).is_none());
    assert_eq!(q.poll_timeout(), Some(ts(1000)));
    // Raised tenfold: the lease the old rate counted weighs a tenth, so the next goes at 100 ms.
    q.set_rate(k, Some(Rate::per_second(nz(10)).burst(nz(1))), ts(0));
    assert!(q.receive(ts(99)).is_none());
    assert!(q.receive(ts(100)).is_some());
    // Lowered again: now one a second from the last start.
    q.set_rate(k, Some(Rate::per_second(nz(1)).burst(nz(1))), ts(100));
    assert!(q.receive(ts(1099)).is_none());
    assert!(q.receive(ts(1100)).is_some());
    // Removed: no state kept, everything goes.
    q.set_rate(k, None, ts(1100));
    assert_eq!(q.rate(k), None);
    assert_eq!(q.waiting_on_rates(), 0);
    assert_eq!(q.receive_many(ts(1100), 10, &mut Vec::new()), 3);
    q.check_invariants().unwrap();
}

#[test]
fn a_clock_stepping_back_neither_bursts_nor_locks_out() {
    let mut q = queue();
    q.set_rate(
        LimitScope::Queue,
        Some(Rate::per_second(nz(2)).burst(nz(1))),
        ts(0),
    );
    for i in 0..5 {
        q.push(i, ts(0)).unwrap();
    }
    assert!(q.receive(ts(10_000)).is_some());
    // The clock goes back ten seconds: the queue's time stands still, so nothing more goes.
    assert!(q.receive(ts(0)).is_none());
    assert!(q.receive(ts(10_499)).is_none());
    // As soon as the clock passes the latest time seen by one interval, the next goes.
    assert!(q.receive(ts(10_500)).is_some());
    assert!(q.receive(ts(10_500)).is_none());
}

#[derive(Clone, Debug)]
enum Op {
    Push {
        kind: Option<u64>,
        part: Option<u64>,
    },
    Receive,
    ReceiveMany(usize),
    Settle(usize, u8),
    Rate(u8, u64, Option<(u32, u64, u32)>),
    Clock(i64),
    Wake,
}

fn op() -> impl Strategy<Value = Op> {
    let key = proptest::option::of(0..3u64);
    let rate = proptest::option::of((1..4u32, 1..40u64, 1..4u32));
    prop_oneof![
        4 => (key.clone(), key).prop_map(|(kind, part)| Op::Push { kind, part }),
        4 => Just(Op::Receive),
        1 => (1..5usize).prop_map(Op::ReceiveMany),
        3 => (any::<usize>(), 0..4u8).prop_map(|(i, how)| Op::Settle(i, how)),
        2 => (0..3u8, 0..3u64, rate).prop_map(|(s, k, r)| Op::Rate(s, k, r)),
        2 => (-30..20i64).prop_map(Op::Clock),
        1 => Just(Op::Wake),
    ]
}

/// Lease starts (queue time, ns) of each limited scope since its rate was last set.
type Ledger = BTreeMap<LimitScope, Vec<u64>>;

/// GCRA's bound for the start just appended to `starts`: any `k` of them span at least
/// `(k - burst) * interval`.
/// Records a start at `at` for an item pushed with `tags` in the ledger of each scope it
/// counts in that has a rate, and checks that each stays within its rate.
fn started(
    q: &Queue<u32>,
    ledger: &mut Ledger,
    tags: (Option<u64>, Option<u64>),
    at: Timestamp,
) -> Result<(), TestCaseError> {
    for sc in scopes(tags) {
        if let Some(rate) = q.rate(sc) {
            let starts = ledger.entry(sc).or_default();
            starts.push(at.as_nanos());
            within_rate(starts, rate)?;
        }
    }
    Ok(())
}

fn within_rate(starts: &[u64], rate: Rate) -> Result<(), TestCaseError> {
    let interval = rate.interval().as_nanos() as u64;
    let j = starts.len() - 1;
    for i in 0..j {
        let k = (j - i + 1) as u64;
        let need = k.saturating_sub(u64::from(rate.burst_size())) * interval;
        prop_assert!(
            starts[j] - starts[i] >= need,
            "{} starts in {} ns under {:?}",
            k,
            starts[j] - starts[i],
            rate
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(seed_config(300, 0x7a7e_0001))]

    #[test]
    fn no_rate_is_exceeded_the_wake_is_exact_and_nothing_is_locked_out(
        ops in proptest::collection::vec(op(), 1..150),
    ) {
        let mut q = queue();
        let mut t: u64 = 1_000;
        let mut tags: BTreeMap<u64, (Option<u64>, Option<u64>)> = BTreeMap::new();
        let mut ledger = Ledger::new();
        let mut held = Vec::new();
        for op in ops {
            let mut leased = Vec::new();
            match op {
                Op::Push { kind, part } => {
                    let mut keys = FlowKeys::new();
                    if let Some(k) = kind { keys = keys.kind(FlowKey::new(k)); }
                    if let Some(p) = part { keys = keys.partition(FlowKey::new(p)); }
                    let id = q.push_flow(0, ts(t), PushOptions::new(), keys).unwrap();
                    tags.insert(id.get(), (kind, part));
                }
                Op::Receive => leased.extend(q.receive(ts(t))),
                Op::ReceiveMany(n) => _ = q.receive_many(ts(t), n, &mut leased),
                Op::Settle(i, how) if !held.is_empty() => {
                    let lease: leaseq_core::Lease<u32> = held.swap_remove(i % held.len());
                    let (r, now) = (lease.receipt, ts(t));
                    // `how` is below 4: ack, nack, put back or snooze.
                    settle_by(&mut q, r, now, how);
                }
                Op::Rate(s, k, r) => {
                    let rate = r.map(|(max, ms, burst)| {
                        Rate::per(nz(max), Duration::from_millis(ms)).burst(nz(burst))
                    });
                    q.set_rate(scope(s, k), rate, ts(t));
                    ledger.remove(&scope(s, k));
                }
                Op::Clock(ms) => {
                    t = t.saturating_add_signed(ms);
                    q.handle_timeout(ts(t));
                }
                Op::Wake => {
                    if let Some(at) = q.poll_timeout() {
                        t = t.max(at.as_nanos() / 1_000_000 + 1);
                        q.handle_timeout(ts(t));
                    }
                }
                _ => {}
            }
            let now = q.now().as_nanos();
            for lease in &leased {
                for sc in scopes(tags[&lease.id.get()]) {
                    if let Some(rate) = q.rate(sc) {
                        let starts = ledger.entry(sc).or_default();
                        starts.push(now);
                        within_rate(starts, rate)?;
                    }
                }
            }
            held.extend(leased);
            held.retain(|l| q.items().any(|v| v.id == l.id
                && matches!(v.state, leaseq_core::ItemState::InFlight { deadline } if deadline == l.deadline)));
            q.check_invariants().map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        }
        // The drain: every lease acked at once, and whenever a receive finds nothing, the
        // queue's next timeout is the exact instant the next item may start (nothing else
        // is scheduled: no delays, no expiries, no lease out, lease-expiry backoff none).
        for lease in held.drain(..) {
            q.ack(lease.receipt, ts(t)).unwrap();
        }
        // Past every snooze's delay.
        q.handle_timeout(q.now().saturating_add(Duration::from_secs(1)));
        let mut steps = 0;
        while !q.is_empty() {
            steps += 1;
            prop_assert!(steps < 10_000, "locked out");
            let now = q.now();
            match q.receive(now) {
                Some(lease) => {
                    started(&q, &mut ledger, tags[&lease.id.get()], now)?;
                    q.ack(lease.receipt, now).unwrap();
                }
                None => {
                    let ready = q.stats().ready;
                    prop_assert_eq!(q.stats().in_flight, 0);
                    if ready == 0 {
                        let at = q.poll_timeout().expect("a delayed item has its timer");
                        q.handle_timeout(at);
                        continue;
                    }
                    prop_assert!(q.waiting_on_rates() > 0);
                    let at = q.poll_timeout().expect("a held item has its wake");
                    prop_assert!(at > now, "a wake at {:?}, now {:?}: a spin", at, now);
                    // Exact: nothing may start a nanosecond before, something starts then.
                    let before = Timestamp::from_nanos(at.as_nanos() - 1);
                    if before > now {
                        prop_assert!(q.receive(before).is_none());
                    }
                    let wakes = q.rate_wakes();
                    q.handle_timeout(at);
                    prop_assert_eq!(q.rate_wakes(), wakes + 1);
                    let got = q.receive(at);
                    prop_assert!(got.is_some(), "nothing at the wake {:?}", at);
                    let lease = got.unwrap();
                    started(&q, &mut ledger, tags[&lease.id.get()], at)?;
                    q.ack(lease.receipt, at).unwrap();
                }
            }
        }
    }
}
