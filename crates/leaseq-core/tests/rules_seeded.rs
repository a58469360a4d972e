//! The crate docs' rules over seeded runs (every pushed item ends acked, dead-lettered or
//! still queued), and regressions for bugs the model test and the fuzzer found.

use std::collections::BTreeSet;
use std::time::Duration;

use leaseq_core::{
    Acked, Backoff, Config, Failure, MessageId, Nacked, PushOptions, Queue, Reason, ReceiptError,
    Timestamp,
};

use leaseq_test_kit::core_queue::{config, leased, ok, queue};
use leaseq_test_kit::time::{ns, ts};

// ----- the seed guide's checks ----------------------------------------------------------

/// A small deterministic PRNG (no dependency, same stream everywhere).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

#[test]
fn every_pushed_item_ends_acked_dead_lettered_or_still_queued() {
    for seed in 0..20 {
        let mut rng = Lcg(seed);
        let mut q: Queue<u64> = Queue::new(
            Config::new(ns(10))
                .with_max_attempts(3)
                .with_backoff(Backoff::exponential(ns(2), ns(8)))
                .with_max_lease(ns(30))
                .with_capacity(40),
        )
        .unwrap();
        let mut now = 0;
        let mut pushed = BTreeSet::new();
        let mut acked = BTreeSet::new();
        let mut leases = Vec::new();
        for n in 0..2_000u64 {
            now += rng.next(3);
            match rng.next(10) {
                0..=2 => {
                    let opts = match rng.next(4) {
                        0 => PushOptions::new().delay(ns(rng.next(20))),
                        1 => PushOptions::new().expires_at(ts(now + 1 + rng.next(60))),
                        _ => PushOptions::new(),
                    };
                    if let Ok(id) = q.push_with(n, ts(now), opts) {
                        assert!(pushed.insert(id));
                    }
                }
                3..=4 => leases.extend(q.receive(ts(now))),
                5..=6 if !leases.is_empty() => {
                    let l = leases.swap_remove(rng.next(leases.len() as u64) as usize);
                    if q.ack(l.receipt, ts(now)).is_ok() {
                        assert!(acked.insert(l.id), "acked twice");
                    }
                }
                7 if !leases.is_empty() => {
                    let l = leases.swap_remove(rng.next(leases.len() as u64) as usize);
                    let _ = q.nack(l.receipt, ts(now), Failure::error("e"));
                }
                8 if !leases.is_empty() => {
                    let i = rng.next(leases.len() as u64) as usize;
                    let _ = q.extend(leases[i].receipt, ts(now), ns(rng.next(25)));
                }
                9 => {
                    if rng.next(5) == 0 {
                        q.redrive_all(ts(now));
                    }
                    q.handle_timeout(ts(now));
                }
                _ => {}
            }
            ok(&q);
        }
        // Still queued: run the queue dry (each drained item is acked at once).
        let live = q.len();
        let acked_before = q.stats().acked;
        let dead: BTreeSet<MessageId> = q.dead_letters().map(|d| d.id).collect();
        let mut queued = BTreeSet::new();
        loop {
            while let Some(l) = q.receive(ts(now)) {
                assert!(queued.insert(l.id));
                assert_eq!(q.ack(l.receipt, ts(now)), Ok(Acked::OnTime));
            }
            match q.poll_timeout() {
                Some(t) => {
                    now = t.as_nanos();
                    q.handle_timeout(t);
                }
                None => break,
            }
        }
        assert!(q.is_empty());
        let newly_dead: BTreeSet<MessageId> = q
            .dead_letters()
            .map(|d| d.id)
            .filter(|id| !dead.contains(id))
            .collect();
        queued.extend(newly_dead);
        assert_eq!(queued.len(), live);
        assert!(acked.is_disjoint(&dead) && acked.is_disjoint(&queued));
        assert!(dead.is_disjoint(&queued));
        let all: BTreeSet<MessageId> = acked.union(&dead).chain(&queued).copied().collect();
        assert_eq!(all, pushed, "seed {seed}");
        assert_eq!(acked.len() as u64, acked_before);
        ok(&q);
    }
}

#[test]
fn an_always_failing_item_is_dead_lettered_after_max_attempts() {
    // The handler fails every time.
    let mut q = queue(config().with_max_attempts(4));
    let id = q.push("bad", ts(0)).unwrap();
    for attempt in 1..=4u32 {
        let l = q.receive(ts(attempt as u64)).unwrap();
        assert_eq!(l.attempt, attempt);
        let want = if attempt < 4 {
            Nacked::Retrying {
                visible_at: ts(attempt as u64),
                attempts: attempt,
            }
        } else {
            Nacked::DeadLettered { attempts: 4 }
        };
        let error = format!("failure {attempt}");
        assert_eq!(
            q.nack(l.receipt, ts(attempt as u64), Failure::error(error)),
            Ok(want)
        );
    }
    assert!(q.receive(ts(10)).is_none());
    let d = q.get_dead_letter(id).unwrap();
    assert_eq!(
        (d.attempts, d.reason, d.last_error.as_deref()),
        (4, Reason::Nacked, Some("failure 4"))
    );
    ok(&q);

    // The holder hangs every time: the leases run out.
    let mut q = queue(config().with_max_attempts(3));
    let id = q.push("hangs", ts(0)).unwrap();
    let mut now = 0;
    while let Some(l) = q.receive(ts(now)) {
        now = l.deadline.as_nanos();
        q.handle_timeout(l.deadline);
    }
    assert_eq!(now, 30);
    let d = q.get_dead_letter(id).unwrap();
    assert_eq!(
        (d.attempts, d.reason, d.last_error.as_deref(), d.at),
        (3, Reason::LeaseExpired, None, ts(30))
    );
    assert_eq!(q.stats().lease_expired, 3);
    ok(&q);
}

// ----- regressions for bugs the model test and the fuzzer found ---------------------------

#[test]
fn redrive_all_first_applies_what_is_due() {
    let mut q = queue(config().with_max_attempts(1));
    let id = q.push("a", ts(0)).unwrap();
    q.receive(ts(0)).unwrap();
    // The lease runs out at 10 on the last attempt: a dead letter at 10, redriven at 10.
    assert_eq!(q.redrive_all(ts(10)), 1);
    assert_eq!(q.receive(ts(10)).unwrap().id, id);
    // With no dead letters, it still takes its time step.
    let mut q = queue(config());
    q.push("b", ts(0)).unwrap();
    q.receive(ts(0)).unwrap();
    assert_eq!(q.redrive_all(ts(10)), 0);
    assert_eq!((q.now(), q.stats().lease_expired), (ts(10), 1));
    ok(&q);
}

#[test]
fn ack_many_takes_its_time_step_even_when_empty() {
    let mut q = queue(config());
    q.push("a", ts(0)).unwrap();
    q.receive(ts(0)).unwrap();
    assert_eq!(q.ack_many(&[], ts(10)), 0);
    assert_eq!((q.now(), q.stats().lease_expired), (ts(10), 1));
    ok(&q);
}

#[test]
fn no_expiry_means_never_even_at_timestamp_max() {
    let mut q = queue(config().with_backoff(Backoff::Fixed(Duration::MAX)));
    let (id, l) = leased(&mut q, "a");
    q.nack(l.receipt, ts(1), Failure::error("e")).unwrap();
    // A driver that jumps to the next timeout lands on "never".
    assert_eq!(q.poll_timeout(), Some(Timestamp::MAX));
    q.handle_timeout(Timestamp::MAX);
    let l = q.receive(Timestamp::MAX).unwrap();
    assert_eq!((l.id, l.attempt, l.deadline), (id, 2, Timestamp::MAX));
    assert_eq!(
        q.nack(l.receipt, Timestamp::MAX, Failure::error("e")),
        Err(ReceiptError::LeaseExpired(id)),
        "a lease handed out at MAX is due at once"
    );
    assert_eq!(q.stats().expired, 0);
    assert!(q.push("b", Timestamp::MAX).is_ok());
    assert_eq!(q.stats().rejected, 0);
    ok(&q);
}

#[test]
fn the_receipt_of_a_redriven_item_reports_dead_lettered() {
    let mut q = queue(config().with_max_attempts(1));
    let (id, l) = leased(&mut q, "a");
    q.handle_timeout(ts(10));
    q.redrive(id, ts(10)).unwrap();
    // The lease ran out; the holder never handed it back.
    assert_eq!(
        q.ack(l.receipt, ts(11)),
        Err(ReceiptError::DeadLettered(id))
    );
    let again = q.receive(ts(11)).unwrap();
    assert_eq!(q.ack(l.receipt, ts(11)), Err(ReceiptError::Redelivered(id)));
    assert_eq!(q.ack(again.receipt, ts(11)), Ok(Acked::OnTime));
    ok(&q);
}

#[test]
fn indexes_stay_bounded_when_leases_are_acked_out_of_order() {
    let mut q = queue(config());
    let leases: Vec<_> = (0..200)
        .map(|_| {
            q.push("x", ts(0)).unwrap();
            q.receive(ts(0)).unwrap()
        })
        .collect();
    for l in leases.into_iter().rev() {
        q.ack(l.receipt, ts(1)).unwrap();
        ok(&q);
    }
    assert!(q.index_sizes().leases <= 65);
}

#[test]
fn the_ready_list_stays_bounded_after_expiries() {
    let mut q = queue(config());
    for _ in 0..100 {
        q.push("keep", ts(0)).unwrap();
    }
    for _ in 0..164 {
        q.push_with("expire", ts(0), PushOptions::new().expires_at(ts(5)))
            .unwrap();
    }
    q.handle_timeout(ts(5));
    ok(&q);
    while q.receive(ts(5)).is_some() {
        ok(&q);
    }
}

#[test]
fn an_item_pushed_after_many_expiring_acks_still_expires() {
    for n in 60..70 {
        let mut q = queue(config());
        let exp = PushOptions::new().expires_at(ts(1_000));
        for _ in 0..n {
            q.push_with("x", ts(0), exp).unwrap();
            let l = q.receive(ts(0)).unwrap();
            q.ack(l.receipt, ts(0)).unwrap();
        }
        let id = q.push_with("last", ts(0), exp).unwrap();
        assert_eq!(q.poll_timeout(), Some(ts(1_000)), "after {n} acks");
        q.handle_timeout(ts(1_000));
        assert!(q.receive(ts(1_000)).is_none(), "after {n} acks");
        assert_eq!(q.get_dead_letter(id).unwrap().reason, Reason::Expired);
        ok(&q);
    }
}

#[test]
fn dead_letter_and_redrive_cycles_keep_the_indexes_bounded() {
    let mut q = queue(config().with_max_attempts(1));
    let exp = PushOptions::new().expires_at(ts(1_000_000));
    q.push_with("held", ts(0), exp).unwrap();
    let _held = q.receive(ts(0)).unwrap();
    let x = q.push_with("cycled", ts(0), exp).unwrap();
    for i in 0..1_000 {
        let l = q.receive(ts(0)).unwrap();
        assert_eq!(l.id, x);
        if i % 50 == 49 {
            q.push_with("other", ts(0), exp).unwrap();
        }
        q.dead_letter(l.receipt, ts(0), None).unwrap();
        q.redrive(x, ts(0)).unwrap();
        if i % 50 == 49 {
            let o = q.receive(ts(0)).unwrap();
            q.ack(o.receipt, ts(0)).unwrap();
        }
        ok(&q);
    }
    assert!(q.index_sizes().expiries <= 2 * 2 + 65);
}
