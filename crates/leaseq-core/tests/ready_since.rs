//! `Queue::oldest_ready_since` (feature `ready-since`): when the oldest ready item became
//! ready, at exact instants, through every way an item becomes ready, and across levels.

use std::time::Duration;

use leaseq_core::{Backoff, Config, Failure, PushOptions, Queue, Timestamp};

fn ts(n: u64) -> Timestamp {
    Timestamp::from_nanos(n)
}

fn queue() -> Queue<&'static str> {
    let config = Config::new(Duration::from_nanos(100))
        .with_max_attempts(5)
        .with_backoff(Backoff::Fixed(Duration::from_nanos(10)))
        .without_jitter();
    Queue::new(config).unwrap()
}

#[test]
fn the_oldest_ready_item_is_the_head_of_the_levels_lists() {
    let mut q = queue();
    assert_eq!(q.oldest_ready_since(), None);
    q.push("a", ts(1)).unwrap();
    q.push("b", ts(5)).unwrap();
    q.push_with("hi", ts(7), PushOptions::new().priority(3))
        .unwrap();
    assert_eq!(q.oldest_ready_since(), Some(ts(1)));
    // The level-3 item goes first; "a" is still the oldest.
    let hi = q.receive(ts(8)).unwrap();
    assert_eq!(hi.item, "hi");
    assert_eq!(q.oldest_ready_since(), Some(ts(1)));
    let a = q.receive(ts(9)).unwrap();
    assert_eq!(q.oldest_ready_since(), Some(ts(5)));
    // Paused: the age goes on.
    q.pause(ts(10));
    assert_eq!(q.oldest_ready_since(), Some(ts(5)));
    q.resume(ts(10));
    let b = q.receive(ts(11)).unwrap();
    assert_eq!(q.oldest_ready_since(), None);

    // Put back at 20: ready from 20. Nacked at 21 with a 10 ns backoff: ready from 31.
    q.put_back(b.receipt, ts(20)).unwrap();
    assert_eq!(q.oldest_ready_since(), Some(ts(20)));
    q.nack(a.receipt, ts(21), Failure::error("x")).unwrap();
    q.handle_timeout(ts(40));
    assert_eq!(q.oldest_ready_since(), Some(ts(20)));
    q.receive(ts(40)).unwrap(); // b
    assert_eq!(
        q.oldest_ready_since(),
        Some(ts(31)),
        "its backoff ended at 31"
    );
    // The level-3 lease (taken at 8) runs out at 108, its backoff ends at 118; `b`'s
    // (taken at 40) at 140, ready from 150.
    q.handle_timeout(ts(200));
    assert_eq!(q.oldest_ready_since(), Some(ts(31)));
    assert_eq!(q.receive(ts(200)).unwrap().item, "hi");
    assert_eq!(q.oldest_ready_since(), Some(ts(31)), "a waits behind");
    assert_eq!(q.receive(ts(200)).unwrap().item, "a");
    assert_eq!(q.oldest_ready_since(), Some(ts(150)));
    assert_eq!(q.receive(ts(200)).unwrap().item, "b");
    assert_eq!(q.oldest_ready_since(), None);
}

#[test]
fn a_delayed_item_is_ready_from_the_end_of_its_delay() {
    let mut q = queue();
    q.push_with(
        "later",
        ts(0),
        PushOptions::new().delay(Duration::from_nanos(50)),
    )
    .unwrap();
    q.handle_timeout(ts(49));
    assert_eq!(q.oldest_ready_since(), None);
    // Applied late (at 80), it still became ready at 50.
    q.handle_timeout(ts(80));
    assert_eq!(q.oldest_ready_since(), Some(ts(50)));
    assert!(q.check_invariants().is_ok());
}
