//! One test per rule of the crate docs, at exact instants (virtual time, nanoseconds).

use std::collections::BTreeSet;
use std::time::Duration;

use leaseq_core::{
    Acked, Backoff, Config, Event, EventMask, Extended, Failure, LateAckKind, MessageId, Nacked,
    PushOptions, Queue, Reason, ReceiptError, RedriveError, Timestamp,
};

use leaseq_test_kit::core_queue::{config, events, leased, ok, queue};
use leaseq_test_kit::time::{ns, ts};

// ----- ack around the deadline -----------------------------------------------------------

#[test]
fn ack_one_nanosecond_before_the_deadline_is_on_time() {
    let mut q = queue(config());
    q.push("a", ts(100)).unwrap();
    let l = q.receive(ts(100)).unwrap();
    assert_eq!(l.deadline, ts(110));
    assert_eq!(q.ack(l.receipt, ts(109)), Ok(Acked::OnTime));
    let s = q.stats();
    assert_eq!((s.acked, s.late_acks_unclaimed, s.lease_expired), (1, 0, 0));
    assert!(q.is_empty());
    ok(&q);
}

#[test]
fn ack_at_the_deadline_is_late_but_accepted_while_unclaimed() {
    let mut q = queue(config());
    let (id, l) = leased(&mut q, "a");
    events(&mut q);
    // At the deadline the lease has run out (the item is visible again), but nobody took it.
    assert_eq!(
        q.ack(l.receipt, ts(10)),
        Ok(Acked::LateUnclaimed { late_by: ns(0) })
    );
    let s = q.stats();
    assert_eq!((s.acked, s.late_acks_unclaimed, s.lease_expired), (1, 1, 1));
    assert_eq!(
        events(&mut q),
        [
            Event::LeaseExpired {
                id,
                attempt: 1,
                deadline: ts(10)
            },
            Event::LateAck {
                id,
                kind: LateAckKind::Unclaimed,
                late_by: Some(ns(0))
            },
        ]
    );
    assert!(q.receive(ts(10)).is_none(), "acked: not delivered again");
    ok(&q);

    // Later still: late_by counts from the deadline.
    let mut q = queue(config());
    q.push("b", ts(0)).unwrap();
    let l = q.receive(ts(0)).unwrap();
    assert_eq!(
        q.ack(l.receipt, ts(17)),
        Ok(Acked::LateUnclaimed { late_by: ns(7) })
    );
    ok(&q);
}

#[test]
fn ack_after_the_item_was_leased_again_is_refused_as_redelivered() {
    let mut q = queue(config());
    let (id, first) = leased(&mut q, "a");
    let second = q.receive(ts(10)).unwrap();
    assert_eq!(
        (second.id, second.attempt, second.deadline),
        (id, 2, ts(20))
    );
    events(&mut q);
    assert_eq!(
        q.ack(first.receipt, ts(11)),
        Err(ReceiptError::Redelivered(id))
    );
    assert_eq!(q.stats().late_acks_stale, 1);
    assert_eq!(q.stats().acked, 0);
    assert_eq!(
        events(&mut q),
        [Event::LateAck {
            id,
            kind: LateAckKind::Redelivered,
            late_by: None
        }]
    );
    // The new holder is unaffected.
    assert_eq!(q.ack(second.receipt, ts(11)), Ok(Acked::OnTime));
    ok(&q);
}

// ----- extend ---------------------------------------------------------------------------

#[test]
fn extend_moves_the_deadline() {
    let mut q = queue(config());
    q.push("a", ts(0)).unwrap();
    let l = q.receive(ts(0)).unwrap();
    assert_eq!(
        q.extend(l.receipt, ts(8), ns(30)),
        Ok(Extended::Until {
            deadline: ts(38),
            capped: false
        })
    );
    assert_eq!(q.poll_timeout(), Some(ts(38)));
    // The old deadline passes without an expiry.
    q.handle_timeout(ts(10));
    assert_eq!(q.stats().lease_expired, 0);
    assert_eq!(q.ack(l.receipt, ts(37)), Ok(Acked::OnTime));
    assert_eq!(q.stats().extends, 1);
    ok(&q);
}

#[test]
fn extend_is_capped_by_max_lease() {
    let mut q = queue(config().with_max_lease(ns(25)));
    let id = q.push("a", ts(0)).unwrap();
    let l = q.receive(ts(5)).unwrap();
    events(&mut q);
    assert_eq!(
        q.extend(l.receipt, ts(10), ns(100)),
        Ok(Extended::Until {
            deadline: ts(30),
            capped: true
        })
    );
    assert_eq!(q.stats().extends_capped, 1);
    assert_eq!(
        events(&mut q),
        [Event::ExtensionCapped {
            id,
            deadline: ts(30)
        }]
    );
    // Not capped when it fits.
    assert_eq!(
        q.extend(l.receipt, ts(12), ns(10)),
        Ok(Extended::Until {
            deadline: ts(22),
            capped: false
        })
    );
    q.handle_timeout(ts(22));
    assert_eq!(q.stats().lease_expired, 1);
    ok(&q);
}

#[test]
fn extend_is_capped_by_item_expiry_and_the_lease_ends_with_it() {
    let mut q = queue(config());
    let id = q
        .push_with("a", ts(0), PushOptions::new().expires_at(ts(14)))
        .unwrap();
    let l = q.receive(ts(0)).unwrap();
    assert_eq!((l.deadline, l.expires_at), (ts(10), Some(ts(14))));
    events(&mut q);
    assert_eq!(
        q.extend(l.receipt, ts(5), ns(20)),
        Ok(Extended::Until {
            deadline: ts(14),
            capped: true
        })
    );
    assert_eq!(
        events(&mut q),
        [Event::ExtensionCapped {
            id,
            deadline: ts(14)
        }]
    );
    q.handle_timeout(ts(14));
    assert!(q.receive(ts(14)).is_none());
    let d = q.get_dead_letter(id).unwrap();
    assert_eq!((d.reason, d.attempts, d.at), (Reason::Expired, 1, ts(14)));
    ok(&q);
}

#[test]
fn extend_to_zero_releases_the_item() {
    let mut q = queue(config().with_backoff(Backoff::Fixed(ns(50))));
    let (id, l) = leased(&mut q, "a");
    assert_eq!(
        q.extend(l.receipt, ts(3), Duration::ZERO),
        Ok(Extended::Released(Nacked::Retrying {
            visible_at: ts(3),
            attempts: 1
        }))
    );
    // Visible at once, whatever the backoff; the attempt counted.
    let again = q.receive(ts(3)).unwrap();
    assert_eq!((again.id, again.attempt), (id, 2));
    assert_eq!(q.ack(l.receipt, ts(3)), Err(ReceiptError::Redelivered(id)));
    assert_eq!(q.stats().nacks, 1);
    ok(&q);
}

// ----- nack and backoff -----------------------------------------------------------------

#[test]
fn nack_counts_an_attempt_and_waits_out_a_fixed_backoff() {
    let mut q = queue(config().with_backoff(Backoff::Fixed(ns(10))));
    let (id, l) = leased(&mut q, "a");
    assert_eq!(
        q.nack(l.receipt, ts(4), Failure::error("boom")),
        Ok(Nacked::Retrying {
            visible_at: ts(14),
            attempts: 1
        })
    );
    assert_eq!(q.poll_timeout(), Some(ts(14)));
    assert!(q.receive(ts(13)).is_none());
    let l = q.receive(ts(14)).unwrap();
    assert_eq!((l.id, l.attempt), (id, 2));
    assert_eq!(q.stats().nacks, 1);
    assert_eq!(q.stats().redelivered, 1);
    ok(&q);
}

#[test]
fn a_lease_put_back_unstarted_keeps_its_attempt_and_is_ready_at_once() {
    let mut q = queue(config().with_max_attempts(1));
    let (id, l) = leased(&mut q, "a");
    assert_eq!(l.attempt, 1);
    // With one attempt allowed, a counted hand-back would dead-letter it.
    assert_eq!(q.put_back(l.receipt, ts(3)), Ok(()));
    let s = q.stats();
    assert_eq!((s.put_back, s.nacks, s.ready, s.in_flight), (1, 0, 1, 0));
    let again = q.receive(ts(3)).unwrap();
    assert_eq!((again.id, again.attempt), (id, 1));
    assert_eq!(q.stats().redelivered, 0);
    // The old receipt is stale; the new lease is the one that settles.
    assert_eq!(
        q.put_back(l.receipt, ts(4)),
        Err(ReceiptError::Redelivered(id))
    );
    // A lease that ran out cannot be put back: its attempt was counted when it ran out
    // (here its last, so the item is a dead letter).
    assert_eq!(q.poll_timeout(), Some(ts(13)));
    q.handle_timeout(ts(13));
    assert_eq!(
        q.put_back(again.receipt, ts(13)),
        Err(ReceiptError::DeadLettered(id))
    );
    assert_eq!(q.stats().dead, 1);
    ok(&q);
}

#[test]
fn nack_waits_out_an_exponential_backoff() {
    let backoff = Backoff::exponential(ns(10), ns(35));
    let mut q = queue(config().with_max_attempts(5).with_backoff(backoff));
    q.push("a", ts(0)).unwrap();
    let mut now = 0;
    for (attempt, delay) in [(1, 10), (2, 20), (3, 35), (4, 35)] {
        let l = q.receive(ts(now)).unwrap();
        assert_eq!(l.attempt, attempt);
        assert_eq!(
            q.nack(l.receipt, ts(now + 1), Failure::error("x")),
            Ok(Nacked::Retrying {
                visible_at: ts(now + 1 + delay),
                attempts: attempt
            })
        );
        assert!(q.receive(ts(now + delay)).is_none());
        now += 1 + delay;
    }
    // A lease that runs out backs off the same way.
    let l = q.receive(ts(now)).unwrap();
    assert_eq!(l.attempt, 5);
    ok(&q);
    let mut q = queue(config().with_backoff(backoff));
    q.push("b", ts(0)).unwrap();
    q.receive(ts(0)).unwrap();
    q.handle_timeout(ts(10));
    assert_eq!(q.poll_timeout(), Some(ts(20)));
    assert!(q.receive(ts(19)).is_none());
    assert_eq!(q.receive(ts(20)).unwrap().attempt, 2);
    ok(&q);
}

#[test]
fn nack_retry_after_replaces_the_backoff() {
    let mut q = queue(config().with_backoff(Backoff::Fixed(ns(100))));
    q.push("a", ts(0)).unwrap();
    let l = q.receive(ts(0)).unwrap();
    assert_eq!(
        q.nack(l.receipt, ts(2), Failure::error("x").retry_after(ns(3))),
        Ok(Nacked::Retrying {
            visible_at: ts(5),
            attempts: 1
        })
    );
    assert!(q.receive(ts(4)).is_none());
    assert_eq!(q.receive(ts(5)).unwrap().attempt, 2);
    ok(&q);
}

#[test]
fn the_last_attempt_dead_letters_with_reason_and_last_error() {
    let mut q = queue(config().with_max_attempts(2));
    let (id, l) = leased(&mut q, "a");
    q.nack(l.receipt, ts(1), Failure::error("boom")).unwrap();
    let l = q.receive(ts(1)).unwrap();
    events(&mut q);
    // No error this time: the last one is kept.
    assert_eq!(
        q.nack(l.receipt, ts(2), Failure::timed_out()),
        Ok(Nacked::DeadLettered { attempts: 2 })
    );
    assert_eq!(
        events(&mut q),
        [Event::DeadLettered {
            id,
            attempts: 2,
            reason: Reason::TimedOut
        }]
    );
    let d = q.get_dead_letter(id).unwrap();
    assert_eq!(
        (d.item, d.attempts, d.reason, d.last_error.as_deref(), d.at),
        ("a", 2, Reason::TimedOut, Some("boom"), ts(2))
    );
    assert!(q.receive(ts(100)).is_none());
    let s = q.stats();
    assert_eq!((s.dead, s.dead_lettered, s.expired), (1, 1, 0));
    ok(&q);
}

// ----- expiry and delays ----------------------------------------------------------------

#[test]
fn an_expired_item_is_never_delivered_again_and_is_a_dead_letter() {
    let mut q = queue(config().with_backoff(Backoff::Fixed(ns(20))));
    let id = q
        .push_with("a", ts(0), PushOptions::new().expires_at(ts(25)))
        .unwrap();
    let l = q.receive(ts(0)).unwrap();
    // Back off until 25: the item expires at the instant it would come back.
    assert_eq!(
        q.nack(l.receipt, ts(5), Failure::error("x")),
        Ok(Nacked::Retrying {
            visible_at: ts(25),
            attempts: 1
        })
    );
    assert_eq!(q.poll_timeout(), Some(ts(25)));
    assert!(q.receive(ts(24)).is_none());
    assert!(q.receive(ts(25)).is_none());
    let d = q.get_dead_letter(id).unwrap();
    assert_eq!(
        (
            d.reason,
            d.attempts,
            d.at,
            d.expires_at,
            d.last_error.as_deref()
        ),
        (Reason::Expired, 1, ts(25), Some(ts(25)), Some("x"))
    );
    let s = q.stats();
    assert_eq!((s.expired, s.dead_lettered, s.live()), (1, 1, 0));
    assert_eq!(q.redrive(id, ts(30)), Err(RedriveError::Expired(id)));
    ok(&q);
}

#[test]
fn a_lease_deadline_is_never_past_the_item_expiry() {
    let mut q = queue(Config::new(ns(100)).with_events(EventMask::ALL));
    let id = q
        .push_with("a", ts(0), PushOptions::new().expires_at(ts(30)))
        .unwrap();
    let l = q.receive(ts(5)).unwrap();
    assert_eq!(l.deadline, ts(30));
    assert_eq!(q.poll_timeout(), Some(ts(30)));
    // The lease ends with the item: expired, not retried.
    q.handle_timeout(ts(30));
    assert_eq!(q.get_dead_letter(id).unwrap().reason, Reason::Expired);
    assert_eq!(q.stats().lease_expired, 1);
    assert_eq!(
        q.ack(l.receipt, ts(31)),
        Err(ReceiptError::DeadLettered(id))
    );
    ok(&q);
}

#[test]
fn a_delayed_push_becomes_visible_after_its_delay() {
    let mut q = queue(config());
    let id = q.push_delayed("a", ts(5), ns(10)).unwrap();
    assert_eq!(q.stats().delayed, 1);
    assert_eq!(q.poll_timeout(), Some(ts(15)));
    assert!(q.receive(ts(14)).is_none());
    let l = q.receive(ts(15)).unwrap();
    assert_eq!((l.id, l.attempt, l.deadline), (id, 1, ts(25)));
    ok(&q);
}

#[test]
fn delivery_is_fifo_by_visibility_time_with_ties_in_push_order() {
    let mut q = queue(config().with_max_attempts(5));
    let a = q.push("a", ts(0)).unwrap();
    let b = q.push("b", ts(0)).unwrap();
    let c = q.push("c", ts(0)).unwrap();
    let order: Vec<_> = std::iter::from_fn(|| q.receive(ts(0)).map(|l| l.id)).collect();
    assert_eq!(order, [a, b, c]);

    // At 10: x's lease runs out (no backoff: visible at that instant), y's delay ends at 10,
    // z's delay ended at 7; w is pushed by the call at 10 itself.
    let mut q = queue(config());
    let x = q.push("x", ts(0)).unwrap();
    q.receive(ts(0)).unwrap();
    let y = q.push_delayed("y", ts(0), ns(10)).unwrap();
    let z = q.push_delayed("z", ts(2), ns(5)).unwrap();
    let w = q.push("w", ts(10)).unwrap();
    let order: Vec<_> = std::iter::from_fn(|| q.receive(ts(12)).map(|l| l.id)).collect();
    assert_eq!(order, [z, x, y, w]);

    // Same instant, pushed in the other order: push order wins.
    let mut q = queue(config());
    let late = q.push_delayed("late", ts(0), ns(10)).unwrap();
    let early = q.push_delayed("early", ts(5), ns(5)).unwrap();
    let order: Vec<MessageId> = std::iter::from_fn(|| q.receive(ts(10)).map(|l| l.id)).collect();
    assert_eq!(order, [late, early]);
    ok(&q);
}

// ----- the driver's side: poll_timeout and handle_timeout ---------------------------------

#[test]
fn poll_timeout_names_the_earliest_change() {
    let mut q = queue(config());
    assert_eq!(q.poll_timeout(), None);
    q.push("a", ts(0)).unwrap();
    assert_eq!(q.poll_timeout(), None, "ready items need no wake-up");
    let l = q.receive(ts(2)).unwrap();
    assert_eq!(q.poll_timeout(), Some(ts(12)));
    q.push_delayed("b", ts(3), ns(5)).unwrap();
    assert_eq!(q.poll_timeout(), Some(ts(8)));
    q.push_with("c", ts(3), PushOptions::new().expires_at(ts(6)))
        .unwrap();
    assert_eq!(q.poll_timeout(), Some(ts(6)));
    q.handle_timeout(ts(6));
    assert_eq!(q.poll_timeout(), Some(ts(8)));
    q.handle_timeout(ts(8));
    assert_eq!(q.poll_timeout(), Some(ts(12)));
    q.ack(l.receipt, ts(9)).unwrap();
    assert_eq!(q.poll_timeout(), None);
    ok(&q);
}

#[test]
fn handle_timeout_early_or_twice_does_nothing() {
    let mut q = queue(config());
    let id = q.push("a", ts(0)).unwrap();
    q.receive(ts(0)).unwrap();
    events(&mut q);
    let before = q.stats();
    q.handle_timeout(ts(9));
    assert_eq!(q.stats(), before);
    assert_eq!(q.poll_event(), None);
    assert_eq!(q.poll_timeout(), Some(ts(10)));

    q.handle_timeout(ts(10));
    let after = q.stats();
    assert_eq!((after.lease_expired, after.ready), (1, 1));
    assert_eq!(
        events(&mut q),
        [Event::LeaseExpired {
            id,
            attempt: 1,
            deadline: ts(10)
        }]
    );
    q.handle_timeout(ts(10));
    q.handle_timeout(ts(3)); // time going backwards: taken as 10
    assert_eq!(q.stats(), after);
    assert_eq!(q.poll_event(), None);
    assert_eq!(q.now(), ts(10));
    ok(&q);
}

// ----- dead letters ---------------------------------------------------------------------

#[test]
fn redrive_resets_attempts_and_keeps_the_id() {
    let mut q = queue(config().with_max_attempts(2));
    let id = q.push("a", ts(0)).unwrap();
    for t in [0, 10] {
        q.receive(ts(t)).unwrap();
    }
    q.handle_timeout(ts(20));
    let d = q.get_dead_letter(id).unwrap();
    assert_eq!((d.attempts, d.reason), (2, Reason::LeaseExpired));
    assert_eq!(q.redrive(id, ts(21)), Ok(id));
    assert!(q.get_dead_letter(id).is_none());
    let l = q.receive(ts(21)).unwrap();
    assert_eq!((l.id, l.attempt, l.item), (id, 1, "a"));
    let s = q.stats();
    assert_eq!((s.redriven, s.dead, s.pushed), (1, 0, 1));
    assert_eq!(q.ack(l.receipt, ts(22)), Ok(Acked::OnTime));
    ok(&q);
}

#[test]
fn take_dead_letter_hands_it_over_once() {
    let mut q = queue(config().with_max_attempts(1));
    let a = q.push("a", ts(0)).unwrap();
    let (b, la) = leased(&mut q, "b");
    let lb = q.receive(ts(0)).unwrap();
    q.dead_letter(la.receipt, ts(1), Some("poison".into()))
        .unwrap();
    q.nack(lb.receipt, ts(1), Failure::error("e")).unwrap();
    let d = q.take_dead_letter(a).unwrap();
    assert_eq!(
        (d.id, d.item, d.reason, d.last_error.as_deref()),
        (a, "a", Reason::Rejected, Some("poison"))
    );
    assert!(q.take_dead_letter(a).is_none());
    assert_eq!(q.redrive(a, ts(2)), Err(RedriveError::NotFound(a)));
    let s = q.stats();
    assert_eq!((s.dead, s.taken), (1, 1));
    let rest = q.take_dead_letters();
    assert_eq!(rest.len(), 1);
    assert_eq!((rest[0].id, rest[0].reason), (b, Reason::Nacked));
    assert_eq!(q.stats().taken, 2);
    assert!(q.dead_letters().next().is_none());
    ok(&q);
}

// ----- events ---------------------------------------------------------------------------

#[test]
fn events_are_bounded_and_the_oldest_dropped() {
    let mut q = queue(config().with_event_capacity(3));
    let ids: Vec<_> = (0..5).map(|_| q.push("x", ts(0)).unwrap()).collect();
    for _ in 0..5 {
        q.receive(ts(0)).unwrap();
    }
    assert_eq!(q.stats().events_dropped, 2);
    assert_eq!(
        events(&mut q),
        [
            Event::Delivered { id: ids[2] },
            Event::Delivered { id: ids[3] },
            Event::Delivered { id: ids[4] },
        ]
    );
    // The default mask leaves out Delivered.
    let mut q = queue(Config::new(ns(10)));
    q.push("x", ts(0)).unwrap();
    q.receive(ts(0)).unwrap();
    assert_eq!(q.poll_event(), None);
    ok(&q);
}

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
