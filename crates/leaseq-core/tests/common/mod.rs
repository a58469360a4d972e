//! Helpers shared by the exact-time test files (`rules.rs`, `bad_input.rs`).

use std::time::Duration;

use leaseq_core::{Backoff, Config, EventMask, Timestamp};

/// `n` nanoseconds after the epoch.
pub(crate) fn ts(n: u64) -> Timestamp {
    Timestamp::from_nanos(n)
}

/// `n` nanoseconds.
pub(crate) fn ns(n: u64) -> Duration {
    Duration::from_nanos(n)
}

/// Visibility 10 ns, 3 attempts, no backoff and no jitter (the rules are checked to the
/// nanosecond; a test about backoff sets its own), every event recorded.
pub(crate) fn config() -> Config {
    Config::new(ns(10))
        .with_max_attempts(3)
        .with_backoff(Backoff::None)
        .without_jitter()
        .with_events(EventMask::ALL)
}
