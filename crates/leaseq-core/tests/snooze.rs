//! Snooze (`Queue::snooze`): put back for a while without counting the attempt, bounded per
//! item. Unit cases, then a property test: over random streams, a snooze within the bound
//! never counts an attempt, and the bound always ends an endless snoozer.

use std::collections::BTreeMap;
use std::time::Duration;

use leaseq_core::{Backoff, Config, Failure, Nacked, Queue, Reason, ReceiptError, Snoozed};
use leaseq_test_kit::core_queue::leased;
use leaseq_test_kit::time::at_ms as ts;
use proptest::prelude::*;

fn queue(max_snoozes: u32, max_attempts: u32) -> Queue<u32> {
    let config = Config::new(Duration::from_secs(10))
        .with_max_attempts(max_attempts)
        .with_backoff(Backoff::None)
        .with_max_snoozes(max_snoozes);
    Queue::new(config).unwrap()
}

#[test]
fn a_snooze_hides_the_item_for_its_delay_and_keeps_the_attempt() {
    let mut q = queue(3, 2);
    let (id, lease) = leased(&mut q, 7);
    let snoozed = q
        .snooze(lease.receipt, ts(1), Duration::from_millis(5))
        .unwrap();
    assert_eq!(
        snoozed,
        Snoozed::Later {
            visible_at: ts(6),
            snoozes: 1
        }
    );
    assert_eq!(q.stats().delayed, 1);
    assert!(q.receive(ts(5)).is_none());
    assert_eq!(q.poll_timeout(), Some(ts(6)));
    let again = q.receive(ts(6)).unwrap();
    assert_eq!((again.id, again.attempt), (id, 1));
    let s = q.stats();
    assert_eq!(
        (s.snoozed, s.nacks, s.delivered, s.redelivered),
        (1, 0, 2, 0)
    );
    q.check_invariants().unwrap();
}

#[test]
fn a_snoozed_receipt_is_done() {
    let mut q = queue(3, 2);
    q.push(7, ts(0)).unwrap();
    let lease = q.receive(ts(0)).unwrap();
    q.snooze(lease.receipt, ts(0), Duration::ZERO).unwrap();
    assert!(matches!(
        q.ack(lease.receipt, ts(0)),
        Err(ReceiptError::Released(_))
    ));
    assert!(q.snooze(lease.receipt, ts(0), Duration::ZERO).is_err());
    // A zero delay: visible at once.
    assert_eq!(q.receive(ts(0)).unwrap().attempt, 1);
    q.check_invariants().unwrap();
}

#[test]
fn past_the_bound_a_snooze_counts_and_ends_in_the_dead_letters() {
    let mut q = queue(2, 2);
    let id = q.push(7, ts(0)).unwrap();
    let mut t = 0;
    let mut results = Vec::new();
    while let Some(lease) = q.receive(ts(t)) {
        results.push(
            q.snooze(lease.receipt, ts(t), Duration::from_millis(1))
                .unwrap(),
        );
        t += 1;
    }
    let later = |snoozes| Snoozed::Later {
        visible_at: ts(snoozes),
        snoozes: snoozes as u32,
    };
    assert_eq!(results[..2], [later(1), later(2)]);
    assert!(matches!(
        results[2],
        Snoozed::Counted(Nacked::Retrying { attempts: 1, .. })
    ));
    assert_eq!(
        results[3],
        Snoozed::Counted(Nacked::DeadLettered { attempts: 2 })
    );
    assert_eq!(results.len(), 4);
    let letter = q.get_dead_letter(id).unwrap();
    assert_eq!(letter.reason, Reason::Released);
    assert_eq!(letter.last_error.as_deref(), Some("snooze limit reached"));
    let s = q.stats();
    assert_eq!((s.snoozed, s.nacks, s.dead_lettered), (2, 2, 1));
    q.check_invariants().unwrap();
}

#[test]
fn a_bound_of_zero_counts_every_snooze_and_the_count_is_per_item_life() {
    let mut q = queue(0, 1);
    let (id, lease) = leased(&mut q, 7);
    let r = q
        .snooze(lease.receipt, ts(0), Duration::from_millis(1))
        .unwrap();
    assert_eq!(r, Snoozed::Counted(Nacked::DeadLettered { attempts: 1 }));
    // Redriven: a new life, its snoozes counted afresh.
    let mut q = queue(1, 1);
    let (id2, lease) = leased(&mut q, 8);
    q.snooze(lease.receipt, ts(0), Duration::ZERO).unwrap();
    let lease = q.receive(ts(0)).unwrap();
    q.nack(lease.receipt, ts(0), Failure::error("x")).unwrap();
    q.redrive(id2, ts(0)).unwrap();
    let lease = q.receive(ts(0)).unwrap();
    let r = q.snooze(lease.receipt, ts(0), Duration::ZERO).unwrap();
    assert_eq!(
        r,
        Snoozed::Later {
            visible_at: ts(0),
            snoozes: 1
        }
    );
    let _ = id;
    q.check_invariants().unwrap();
}

#[derive(Clone, Debug)]
enum Op {
    Push,
    Receive,
    Ack(usize),
    Nack(usize),
    Snooze(usize, u64),
    Wait(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::Push),
        4 => Just(Op::Receive),
        1 => any::<usize>().prop_map(Op::Ack),
        1 => any::<usize>().prop_map(Op::Nack),
        4 => (any::<usize>(), 0..4u64).prop_map(|(i, d)| Op::Snooze(i, d)),
        2 => (0..15u64).prop_map(Op::Wait),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Every delivery's attempt is the previous one's plus one, unless the previous lease
    /// was snoozed within the bound (then the same): a snooze within the bound is never
    /// counted; past it each snooze counts. Leases run 10 ms, so waits expire them too.
    #[test]
    fn a_snooze_within_the_bound_is_never_counted(
        max_snoozes in 0..4u32,
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        let mut q = queue(max_snoozes, 4);
        let mut t = 0;
        let mut held = Vec::new();
        // Per id: the attempt the next delivery must have, and uncounted snoozes so far.
        let mut next: BTreeMap<u64, (u32, u32)> = BTreeMap::new();
        let mut snoozed = 0;
        for op in ops {
            match op {
                Op::Push => {
                    let id = q.push(0, ts(t)).unwrap();
                    next.insert(id.get(), (1, 0));
                }
                Op::Receive => {
                    if let Some(lease) = q.receive(ts(t)) {
                        let (want, _) = next[&lease.id.get()];
                        prop_assert_eq!(lease.attempt, want);
                        next.get_mut(&lease.id.get()).unwrap().0 = want + 1;
                        held.push(lease);
                    }
                }
                Op::Ack(i) | Op::Nack(i) | Op::Snooze(i, _) if !held.is_empty() => {
                    let lease = held.swap_remove(i % held.len());
                    match op {
                        Op::Ack(_) => _ = q.ack(lease.receipt, ts(t)),
                        Op::Nack(_) => _ = q.nack(lease.receipt, ts(t), Failure::error("e")),
                        Op::Snooze(_, d) => {
                            let r = q.snooze(lease.receipt, ts(t), Duration::from_millis(d));
                            let entry = next.get_mut(&lease.id.get()).unwrap();
                            match r {
                                Ok(Snoozed::Later { snoozes, .. }) => {
                                    prop_assert!(entry.1 < max_snoozes);
                                    entry.0 -= 1;
                                    entry.1 += 1;
                                    snoozed += 1;
                                    prop_assert_eq!(snoozes, entry.1);
                                }
                                Ok(Snoozed::Counted(_)) => prop_assert_eq!(entry.1, max_snoozes),
                                Ok(_) => prop_assert!(false, "no other outcome"),
                                Err(_) => {} // the lease had run out
                            }
                        }
                        _ => unreachable!(),
                    }
                }
                Op::Wait(ms) => {
                    t += ms;
                    q.handle_timeout(ts(t));
                }
                _ => {}
            }
            prop_assert_eq!(q.stats().snoozed, snoozed);
            prop_assert!(q.check_invariants().is_ok(), "{:?}", q.check_invariants());
        }
    }
}
