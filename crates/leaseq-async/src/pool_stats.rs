//! [`PoolStats`]: a snapshot of a pool, what [`Pool::stats`](crate::Pool::stats) returns and
//! what [`diagnose`](crate::diagnose) reads. It depends on nothing here but the core, so that
//! both `pool` and `diagnosis` can use it without depending on each other.

use leaseq_core::{Stats, TypeReport};

/// A snapshot of a pool: handler outcomes, per-type latencies and suggested timeouts, and the
/// queue's own stats.
///
/// With the `serde` feature it serializes, but does not deserialize: the item types are
/// `&'static str`.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct PoolStats {
    /// Handled and acked.
    pub ok: u64,
    /// Handler returned a retryable error (item nacked).
    pub failed: u64,
    /// Item timeout fired (item handed back at once).
    pub timed_out: u64,
    /// Handler panicked (caught; item nacked with the panic message).
    pub panicked: u64,
    /// Handler returned a permanent error (item dead-lettered at once).
    pub permanent: u64,
    /// Settles refused because the lease had been lost (the item runs elsewhere).
    pub stale_settles: u64,
    /// Settles the store could not make durable (disk full, connection lost: not done, or
    /// an outcome it cannot know). The item comes back unless the settle landed after all.
    pub failed_settles: u64,
    /// Blocking handlers still running when their item timed out, in all.
    pub blocking_overruns: u64,
    /// ... and of those, how many are still running now.
    pub blocking_overruns_running: u64,
    /// Panics caught by a worker outside its handler's run: a `Drop` of a timed-out
    /// handler's future or of an item that panicked, or a panicking item-type or timeout
    /// function. The worker goes on; an item it still held went back to the queue.
    pub worker_panics: u64,
    /// Times the watchdog reported a stuck worker.
    pub stuck_reports: u64,
    /// Whether the pool keeps held leases alive with the heartbeat.
    pub heartbeat: bool,
    /// Per item type (in name order): outcomes, latency quantiles, timeout rate, suggested
    /// item timeout.
    pub types: Vec<(&'static str, TypeReport)>,
    /// The queue's stats at the same moment.
    pub queue: Stats,
}

impl PoolStats {
    /// Handlings of every outcome (saturating: any snapshot adds up without a panic).
    pub fn handled(&self) -> u64 {
        [self.failed, self.timed_out, self.panicked, self.permanent]
            .into_iter()
            .fold(self.ok, u64::saturating_add)
    }
}
