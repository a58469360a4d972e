//! One test per rule of the crate docs, at exact instants (virtual time, nanoseconds): acks
//! around the deadline, extend, nack and backoff. Expiry, delays, the driver's timeouts, dead
//! letters and events are in `rules_expiry.rs`; seeded runs and regressions in `rules_seeded.rs`.

use std::time::Duration;

use leaseq_core::{
    Acked, Backoff, Event, Extended, Failure, LateAckKind, Nacked, PushOptions, Reason,
    ReceiptError,
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
