//! Instants and durations at nanosecond and second resolution, for virtual-time tests.

use std::time::Duration;

use leaseq_core::Timestamp;

/// `n` nanoseconds after the epoch.
pub fn ts(n: u64) -> Timestamp {
    Timestamp::from_nanos(n)
}

/// `n` nanoseconds.
pub fn ns(n: u64) -> Duration {
    Duration::from_nanos(n)
}

/// `n` seconds after the epoch.
pub fn secs(n: u64) -> Timestamp {
    Timestamp::from_duration(Duration::from_secs(n))
}

/// `n` milliseconds after the epoch.
pub fn at_ms(n: u64) -> Timestamp {
    Timestamp::from_nanos(n * 1_000_000)
}
