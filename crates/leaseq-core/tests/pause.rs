//! Pause and resume (`Queue::pause`): a paused queue leases nothing at any time, accepts
//! pushes, runs its timers and settles the leases already out; resumed, it serves what it
//! kept. A property test over random operations and times, and exact-time rules.

use std::time::Duration;

use leaseq_core::{Backoff, Config, EventMask, Failure, Lease, PushOptions, Queue, Timestamp};
use proptest::prelude::*;

/// `n` nanoseconds after the epoch.
fn ts(n: u64) -> Timestamp {
    Timestamp::from_nanos(n)
}

fn config() -> Config {
    Config::new(Duration::from_nanos(50))
        .with_max_attempts(3)
        .with_backoff(Backoff::Fixed(Duration::from_nanos(7)))
        .without_jitter()
        .with_events(EventMask::ALL)
}

fn ok<T>(q: &Queue<T>) {
    if let Err(e) = q.check_invariants() {
        panic!("{e}");
    }
    q.stats().check_conservation().unwrap();
}

#[derive(Clone, Debug)]
enum Op {
    Push { level: u8, delay: u64 },
    Receive,
    ReceiveMany(usize),
    Ack(usize),
    Nack(usize),
    Release(usize),
    Advance(u64),
    Pause,
    Resume,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..3, prop::sample::select(vec![0u64, 0, 5, 40])).prop_map(|(level, delay)| Op::Push { level, delay }),
        3 => Just(Op::Receive),
        2 => (1usize..20).prop_map(Op::ReceiveMany),
        2 => any::<usize>().prop_map(Op::Ack),
        1 => any::<usize>().prop_map(Op::Nack),
        1 => any::<usize>().prop_map(Op::Release),
        3 => prop::sample::select(vec![0u64, 1, 6, 30, 200]).prop_map(Op::Advance),
        1 => Just(Op::Pause),
        1 => Just(Op::Resume),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// While paused, no receive leases anything, at any time and whatever became visible
    /// (pushes, ended delays and backoffs, leases that ran out); pushes are accepted and
    /// leases already out settle. Running, a receive leases whenever something is ready.
    /// Resumed at the end, every live item is served.
    #[test]
    fn no_lease_while_paused(ops in prop::collection::vec(op(), 1..120)) {
        let mut q: Queue<u32> = Queue::new(config()).unwrap();
        let mut now = 0u64;
        let mut held: Vec<Lease<u32>> = Vec::new();
        let mut paused = false;
        let mut out = Vec::new();
        for (n, op) in ops.into_iter().enumerate() {
            let t = ts(now);
            match op {
                Op::Push { level, delay } => {
                    let opts = PushOptions::new().priority(level).delay(Duration::from_nanos(delay));
                    prop_assert!(q.push_with(n as u32, t, opts).is_ok());
                }
                Op::Receive => {
                    let ready = { q.handle_timeout(t); q.stats().ready };
                    match q.receive(t) {
                        Some(l) => { prop_assert!(!paused); held.push(l) }
                        None => prop_assert!(paused || ready == 0),
                    }
                }
                Op::ReceiveMany(max) => {
                    out.clear();
                    q.handle_timeout(t);
                    let ready = q.stats().ready as usize;
                    let got = q.receive_many(t, max, &mut out);
                    prop_assert_eq!(got, if paused { 0 } else { max.min(ready) });
                    held.append(&mut out);
                }
                Op::Ack(i) if !held.is_empty() => {
                    let l = held.swap_remove(i % held.len());
                    let _ = q.ack(l.receipt, t);
                }
                Op::Nack(i) if !held.is_empty() => {
                    let l = held.swap_remove(i % held.len());
                    let _ = q.nack(l.receipt, t, Failure::error("no"));
                }
                Op::Release(i) if !held.is_empty() => {
                    let l = held.swap_remove(i % held.len());
                    let _ = q.release(l.receipt, t);
                }
                Op::Ack(_) | Op::Nack(_) | Op::Release(_) => {}
                Op::Advance(d) => {
                    now += d;
                    q.handle_timeout(ts(now));
                }
                Op::Pause => {
                    prop_assert_eq!(q.pause(t), !paused);
                    paused = true;
                }
                Op::Resume => {
                    prop_assert_eq!(q.resume(t), paused);
                    paused = false;
                }
            }
            prop_assert_eq!(q.is_paused(), paused);
            prop_assert_eq!(q.stats().paused, paused);
            ok(&q);
        }
        // Resumed (if it was paused), far enough on that every delay and lease is over:
        // everything live is served.
        q.resume(ts(now));
        let end = ts(now + 10_000);
        q.handle_timeout(end);
        let live = q.len();
        let mut served = 0;
        while let Some(l) = q.receive(end) {
            served += 1;
            q.ack(l.receipt, end).unwrap();
        }
        prop_assert_eq!(served, live);
        ok(&q);
    }
}

#[test]
fn pushes_while_paused_are_kept_and_served_in_order_once_resumed() {
    let mut q = Queue::new(config()).unwrap();
    q.push("a", ts(0)).unwrap();
    assert!(q.pause(ts(1)));
    assert!(!q.pause(ts(1)), "pausing a paused queue changes nothing");
    q.push("b", ts(2)).unwrap();
    q.push_with("c", ts(2), PushOptions::new().priority(7))
        .unwrap();
    for t in [2, 3, 1_000, 1_000_000] {
        assert!(q.receive(ts(t)).is_none(), "nothing leased at {t}");
    }
    assert_eq!(q.stats().ready, 3);
    assert!(q.resume(ts(1_000_000)));
    assert!(!q.resume(ts(1_000_000)));
    let order: Vec<_> = std::iter::from_fn(|| q.receive(ts(1_000_000)).map(|l| l.item)).collect();
    assert_eq!(order, ["c", "a", "b"]);
    ok(&q);
}

#[test]
fn leases_out_when_paused_settle_and_run_out_as_usual() {
    let mut q = Queue::new(config()).unwrap();
    q.push("a", ts(0)).unwrap();
    q.push("b", ts(0)).unwrap();
    let a = q.receive(ts(0)).unwrap();
    let b = q.receive(ts(0)).unwrap();
    q.pause(ts(1));
    q.ack(a.receipt, ts(2)).unwrap();
    // `b`'s lease runs out at 50 and its backoff ends at 57: ready, not leased.
    q.handle_timeout(ts(57));
    assert_eq!((q.stats().ready, q.stats().lease_expired), (1, 1));
    assert!(q.receive(ts(57)).is_none());
    let mut out = Vec::new();
    assert_eq!(q.receive_many(ts(60), 16, &mut out), 0);
    q.resume(ts(60));
    let again = q.receive(ts(60)).unwrap();
    assert_eq!((again.item, again.attempt), (b.item, 2));
    ok(&q);
}

#[test]
fn stats_show_the_flag() {
    let mut q: Queue<u8> = Queue::new(config()).unwrap();
    assert!(!q.stats().paused);
    q.pause(Timestamp::ZERO);
    assert!(q.stats().paused);
    assert!(q.stats().to_string().ends_with("; paused"));
    q.resume(Timestamp::ZERO);
    assert!(!q.stats().to_string().contains("paused"));
}
