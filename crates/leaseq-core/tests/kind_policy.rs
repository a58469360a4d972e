//! The per-kind retry policy with explicit time: a kind's verdict against a spec for any
//! rules and attempt, the store (the core queue) reaching that verdict from `resolve`'s
//! failure, "retry after D" redelivered at exactly D, "do not retry" dead-lettered at once
//! with the permanent reason, and bad rules refused.

use std::time::Duration;

use leaseq_core::{
    Backoff, Config, ConfigError, Failure, Jitter, KindPolicy, Nacked, Queue, Reason, Retry,
    RetryPolicy, Verdict,
};
use leaseq_test_kit::seeded::seed_config;
use leaseq_test_kit::time::{ns, ts};
use proptest::prelude::*;

fn backoff() -> impl Strategy<Value = Backoff> {
    prop_oneof![
        Just(Backoff::None),
        (1u64..50).prop_map(|d| Backoff::Fixed(ns(d))),
        (1u64..20, 20u64..200).prop_map(|(b, m)| Backoff::exponential(ns(b), ns(m))),
    ]
}

fn kind() -> impl Strategy<Value = KindPolicy> {
    (
        prop::option::of(1u32..8),
        prop::option::of(backoff()),
        prop::option::of(1u64..100),
    )
        .prop_map(|(max, backoff, timeout)| {
            let mut k = KindPolicy::new();
            if let Some(m) = max {
                k = k.with_max_attempts(m);
            }
            if let Some(b) = backoff {
                k = k.with_backoff(b);
            }
            if let Some(t) = timeout {
                k = k.with_timeout(ns(t));
            }
            k
        })
}

fn retry() -> impl Strategy<Value = Retry> {
    prop_oneof![
        Just(Retry::Backoff),
        (0u64..100).prop_map(|d| Retry::After(ns(d))),
        Just(Retry::Never),
    ]
}

/// The verdict, from the rules as documented, without jitter.
fn spec(kind: &KindPolicy, queue: &Config, attempts: u32, reason: Reason, retry: Retry) -> Verdict {
    let max = kind
        .max_attempts()
        .unwrap_or(u32::MAX)
        .min(queue.max_attempts());
    match retry {
        Retry::Never => Verdict::DeadLetter { reason },
        _ if attempts >= max => Verdict::DeadLetter { reason },
        Retry::After(delay) => Verdict::Retry { delay },
        _ => Verdict::Retry {
            delay: kind.backoff().unwrap_or(*queue.backoff()).delay(attempts),
        },
    }
}

proptest! {
    #![proptest_config(seed_config(1000, 0x4b1d))]

    /// For any kind, queue and handler answer, every attempt of one item: the verdict is the
    /// spec's, and the queue, nacked with `resolve`'s failure, does exactly that.
    #[test]
    fn the_queue_reaches_the_kinds_verdict(
        kind in kind(),
        queue_max in 1u32..8,
        queue_backoff in backoff(),
        answers in prop::collection::vec(retry(), 8),
    ) {
        let config = Config::new(ns(1000)).with_max_attempts(queue_max).with_backoff(queue_backoff).without_jitter();
        let mut q = Queue::new(config.clone()).unwrap();
        let (mut verdicts, mut resolver) = (RetryPolicy::new(&config), RetryPolicy::new(&config));
        let id = q.push(7u8, ts(0)).unwrap();
        let mut now = 0;
        for (attempt, retry) in (1..).zip(answers) {
            let lease = q.receive(ts(now)).expect("retried items come back");
            prop_assert_eq!(lease.attempt, attempt);
            let expected = spec(&kind, &config, attempt, Reason::Nacked, retry);
            let verdict = kind.after_failure(&mut verdicts, attempt, false, Reason::Nacked, retry);
            prop_assert_eq!(verdict, expected);
            let mut handler = Failure::error("boom");
            handler.retry = retry;
            let failure = kind.resolve(&mut resolver, attempt, false, handler);
            prop_assert_eq!(failure.error.as_deref(), Some("boom"));
            match (q.nack(lease.receipt, ts(now), failure).unwrap(), verdict) {
                (Nacked::Retrying { visible_at, .. }, Verdict::Retry { delay }) => {
                    prop_assert_eq!(visible_at, ts(now).saturating_add(delay));
                    now = visible_at.as_nanos();
                }
                (Nacked::DeadLettered { attempts }, Verdict::DeadLetter { reason }) => {
                    prop_assert_eq!(attempts, attempt);
                    let dead = q.get_dead_letter(id).unwrap();
                    prop_assert_eq!((dead.reason, dead.last_error.as_deref()), (reason, Some("boom")));
                    break;
                }
                (got, want) => prop_assert!(false, "queue did {got:?}, kind said {want:?}"),
            }
        }
    }

    /// With the queue's jitter, a kind's backoff is shortened by at most the jitter's share,
    /// the same from the same seed; a handler's own delay is never jittered.
    #[test]
    fn a_kinds_backoff_takes_the_queues_jitter(seed in any::<u64>(), percent in 0u8..=100, base in 1u64..1000) {
        let config = Config::new(ns(1000)).with_max_attempts(10).with_jitter(Jitter::new(percent, seed));
        let kind = KindPolicy::new().with_backoff(Backoff::exponential(ns(base), ns(base * 8)));
        let (mut a, mut b) = (RetryPolicy::new(&config), RetryPolicy::new(&config));
        for attempts in 1..10 {
            let full = kind.backoff().unwrap().delay(attempts);
            let v = kind.after_failure(&mut a, attempts, false, Reason::Nacked, Retry::Backoff);
            prop_assert_eq!(v, kind.after_failure(&mut b, attempts, false, Reason::Nacked, Retry::Backoff));
            let Verdict::Retry { delay } = v else { panic!("{v:?}") };
            prop_assert!(delay <= full && delay.as_nanos() * 100 >= full.as_nanos() * (100 - u128::from(percent)));
            let exact = Retry::After(ns(base));
            let v = kind.after_failure(&mut a, attempts, false, Reason::Nacked, exact);
            prop_assert_eq!(v, Verdict::Retry { delay: ns(base) });
        }
    }
}

/// "Retry after D" from the handler: not visible a nanosecond before `now + D`, visible at it,
/// whatever the kind's backoff.
#[test]
fn retry_after_is_honoured_to_the_nanosecond() {
    let config = Config::new(ns(1000)).with_backoff(Backoff::Fixed(ns(5)));
    let kind = KindPolicy::new().with_backoff(Backoff::Fixed(ns(7)));
    let mut policy = RetryPolicy::new(&config);
    let mut q = Queue::new(config).unwrap();
    q.push("job", ts(0)).unwrap();
    let lease = q.receive(ts(10)).unwrap();
    let f = kind.resolve(
        &mut policy,
        1,
        false,
        Failure::error("rate limited").retry_after(ns(333)),
    );
    q.nack(lease.receipt, ts(10), f).unwrap();
    assert!(q.receive(ts(342)).is_none());
    assert_eq!(q.receive(ts(343)).unwrap().attempt, 2);
}

/// "Do not retry" dead-letters at the first attempt, with the reason a poison item gets
/// from `Queue::dead_letter`, and the handler's error; also straight through `Queue::nack`.
#[test]
fn do_not_retry_dead_letters_at_once_with_the_permanent_reason() {
    let config = Config::new(ns(1000)).with_max_attempts(10);
    let kind = KindPolicy::new().with_max_attempts(5);
    let mut policy = RetryPolicy::new(&config);
    let mut q = Queue::new(config).unwrap();
    let (poison, through_kind, direct) = (
        q.push(1, ts(0)).unwrap(),
        q.push(2, ts(0)).unwrap(),
        q.push(3, ts(0)).unwrap(),
    );
    let (a, b, c) = (
        q.receive(ts(1)).unwrap(),
        q.receive(ts(1)).unwrap(),
        q.receive(ts(1)).unwrap(),
    );
    q.dead_letter(a.receipt, ts(2), Some("bad".into())).unwrap();
    let f = kind.resolve(&mut policy, 1, false, Failure::permanent("invalid input"));
    assert_eq!(f.retry, Retry::Never);
    assert_eq!(
        q.nack(b.receipt, ts(2), f).unwrap(),
        Nacked::DeadLettered { attempts: 1 }
    );
    q.nack(c.receipt, ts(2), Failure::permanent("no")).unwrap();
    let permanent = q.get_dead_letter(poison).unwrap().reason;
    assert_ne!(permanent, Reason::Nacked);
    for (id, error) in [(through_kind, "invalid input"), (direct, "no")] {
        let dead = q.get_dead_letter(id).unwrap();
        assert_eq!((dead.reason, dead.attempts), (permanent, 1));
        assert_eq!(dead.last_error.as_deref(), Some(error));
    }
}

/// A kind's max attempts lowers the queue's (dead letter with the failure's own reason); a
/// kind asking for more than the queue's gets the queue's.
#[test]
fn a_kind_can_lower_max_attempts_not_raise_them() {
    let config = Config::new(ns(1000)).with_max_attempts(4);
    let mut policy = RetryPolicy::new(&config);
    let dead_at = |kind: KindPolicy, policy: &mut RetryPolicy| {
        (1..=10)
            .find_map(|a| {
                match kind.after_failure(policy, a, false, Reason::TimedOut, Retry::Backoff) {
                    Verdict::DeadLetter { reason } => Some((a, reason)),
                    Verdict::Retry { .. } => None,
                }
            })
            .unwrap()
    };
    let lower = KindPolicy::new().with_max_attempts(2);
    assert_eq!(dead_at(lower, &mut policy), (2, Reason::TimedOut));
    let higher = KindPolicy::new().with_max_attempts(9);
    assert_eq!(dead_at(higher, &mut policy), (4, Reason::TimedOut));
    assert_eq!(
        dead_at(KindPolicy::new(), &mut policy),
        (4, Reason::TimedOut)
    );
}

/// An expired item is dead-lettered as expired, whatever the handler or the kind says.
#[test]
fn expiry_wins_over_the_kind_and_the_handler() {
    let config = Config::new(ns(1000));
    let mut policy = RetryPolicy::new(&config);
    let kind = KindPolicy::new()
        .with_max_attempts(1)
        .with_backoff(Backoff::Fixed(ns(3)));
    for retry in [Retry::Backoff, Retry::After(ns(1)), Retry::Never] {
        let v = kind.after_failure(&mut policy, 1, true, Reason::Nacked, retry);
        assert_eq!(
            v,
            Verdict::DeadLetter {
                reason: Reason::Expired
            }
        );
    }
}

#[test]
fn bad_rules_are_refused() {
    assert_eq!(KindPolicy::new().validate(), Ok(()));
    let zero = KindPolicy::new().with_max_attempts(0);
    assert_eq!(zero.validate(), Err(ConfigError::ZeroAttempts));
    let instant = KindPolicy::new().with_timeout(Duration::ZERO);
    assert_eq!(instant.validate(), Err(ConfigError::ZeroItemTimeout));
    let shrinking = KindPolicy::new().with_backoff(Backoff::exponential(ns(10), ns(5)));
    assert_eq!(
        shrinking.validate(),
        Err(ConfigError::BackoffCapBelowBase {
            base: ns(10),
            max: ns(5)
        })
    );
    assert_eq!(instant.timeout(), Some(Duration::ZERO));
}
