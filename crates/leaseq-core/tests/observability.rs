//! What the core offers observers: dead letters counted by reason.

use std::time::Duration;

use leaseq_core::{Config, Failure, PushOptions, Queue, Reason, Timestamp};

fn at(ms: u64) -> Timestamp {
    Timestamp::from_duration(Duration::from_millis(ms))
}

/// `dead_lettered_by` counts each burial under its reason, whatever buried it (a nack, a
/// holder's `dead_letter`, a lease running out, an expiry), and the counts add up to
/// `Stats::dead_lettered`; taking dead letters does not lower them.
#[test]
fn dead_letters_are_counted_by_reason() {
    let config = Config::new(Duration::from_secs(1)).with_max_attempts(1);
    let mut q: Queue<u32> = Queue::new(config).unwrap();
    for n in 0..4 {
        q.push(n, at(0)).unwrap();
    }
    let expiring = PushOptions::new()
        .delay(Duration::from_secs(10))
        .expires_at(at(500));
    q.push_with(4, at(0), expiring).unwrap();
    let a = q.receive(at(0)).unwrap();
    q.nack(a.receipt, at(0), Failure::error("boom")).unwrap();
    let b = q.receive(at(0)).unwrap();
    q.nack(b.receipt, at(0), Failure::timed_out()).unwrap();
    let c = q.receive(at(0)).unwrap();
    q.dead_letter(c.receipt, at(0), None).unwrap();
    let _d = q.receive(at(0)).unwrap();
    q.handle_timeout(at(2000));
    let by = |r| q.dead_lettered_by(r);
    assert_eq!(
        Reason::ALL.map(by),
        [1, 1, 1, 0, 0, 1, 0, 1],
        "lease expired, nacked, timed out, dropped, released, terminated, panicked, expired"
    );
    assert_eq!(
        Reason::ALL.map(by).iter().sum::<u64>(),
        q.stats().dead_lettered
    );
    assert_eq!(q.take_dead_letters().len(), 5);
    assert_eq!(q.dead_lettered_by(Reason::Nacked), 1);
}
