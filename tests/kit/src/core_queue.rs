//! The core queue's test helpers: a queue of string items, its events, its invariants.

use leaseq_core::{
    Acked, Backoff, Config, Event, EventMask, Lease, MessageId, PushOptions, Queue, Timestamp,
};

use crate::time::ts;

use crate::time::ns;

/// Visibility 10 ns, 3 attempts, no backoff and no jitter (the rules are checked to the
/// nanosecond; a test about backoff sets its own), every event recorded.
pub fn config() -> Config {
    Config::new(ns(10))
        .with_max_attempts(3)
        .with_backoff(Backoff::None)
        .without_jitter()
        .with_events(EventMask::ALL)
}

/// Visibility 20 s, 3 attempts, exponential backoff from 5 ms to 20 ms: the root suites'
/// jobs on every store, retried in real time but quickly.
pub fn quick_retries() -> Config {
    Config::new(std::time::Duration::from_secs(20))
        .with_max_attempts(3)
        .with_backoff(Backoff::exponential(
            std::time::Duration::from_millis(5),
            std::time::Duration::from_millis(20),
        ))
}

/// A queue of string items with `config` (panics if the config is refused).
pub fn queue(config: Config) -> Queue<&'static str> {
    Queue::new(config).unwrap()
}

/// Every event recorded so far, oldest first.
pub fn events<T>(q: &mut Queue<T>) -> Vec<Event> {
    std::iter::from_fn(|| q.poll_event()).collect()
}

/// Panics with the broken invariant, if any.
pub fn ok<T>(q: &Queue<T>) {
    if let Err(e) = q.check_invariants() {
        panic!("{e}");
    }
}

/// Pushes `item` at 0, then receives at 0 (the next ready item: `item` when nothing else
/// was ready); the pushed id and the lease. Panics if either is refused.
pub fn leased<T: Clone>(q: &mut Queue<T>, item: T) -> (MessageId, Lease<T>) {
    let id = q.push(item, ts(0)).expect("push");
    let lease = q.receive(ts(0)).expect("a ready item");
    (id, lease)
}

/// Settles the lease of `receipt` the way a generated `how` says: `0` ack, `1` nack, `2`
/// put back, `3` snooze 2 ms, else dead-letter; its refusal, if any, is the model's to
/// ignore (a stale receipt is a case the model tests draw).
pub fn settle_by<T: Clone>(
    q: &mut Queue<T>,
    receipt: leaseq_core::Receipt,
    now: leaseq_core::Timestamp,
    how: u8,
) {
    let _ = match how {
        0 => q.ack(receipt, now).map(|_| ()),
        1 => q
            .nack(receipt, now, leaseq_core::Failure::error("e"))
            .map(|_| ()),
        2 => q.put_back(receipt, now),
        3 => q
            .snooze(receipt, now, std::time::Duration::from_millis(2))
            .map(|_| ()),
        _ => q.dead_letter(receipt, now, None).map(|_| ()),
    };
}

/// Push options at priority `level`.
pub fn at(level: u8) -> PushOptions {
    PushOptions::new().priority(level)
}

/// Push options with the unique key `key`.
pub fn keyed(key: &str) -> PushOptions {
    PushOptions::new().key(key)
}

/// Receives everything visible at `now`, acking each, and returns the items in order.
pub fn drain(q: &mut Queue<&'static str>, now: Timestamp) -> Vec<&'static str> {
    let mut got = Vec::new();
    while let Some(l) = q.receive(now) {
        got.push(l.item);
        q.ack(l.receipt, now).unwrap();
    }
    got
}

/// The item behind `id` can still be received and acked: nothing was lost.
pub fn recoverable(q: &mut Queue<&'static str>, id: MessageId, item: &str) {
    ok(q);
    let mut now = q.now();
    let l = match q.receive(now) {
        Some(l) => l,
        None => {
            // Waiting for a delay or backoff: wake when the queue says.
            now = q.poll_timeout().expect("the item is scheduled").max(now);
            q.handle_timeout(now);
            q.receive(now).expect("the item comes back")
        }
    };
    assert_eq!((l.id, l.item), (id, item));
    let acked = q.ack(l.receipt, now);
    if now == Timestamp::MAX {
        // A lease handed out at "never" is due at once, but nobody else has it.
        assert!(
            matches!(acked, Ok(Acked::LateUnclaimed { .. })),
            "{acked:?}"
        );
    } else {
        assert_eq!(acked, Ok(Acked::OnTime));
    }
    ok(q);
}
