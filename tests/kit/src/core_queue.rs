//! The core queue's test helpers: a queue of string items, its events, its invariants.

use leaseq_core::{Backoff, Config, Event, EventMask, Queue};

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
