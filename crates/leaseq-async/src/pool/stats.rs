//! What a pool counts, and what it reports at the end.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use leaseq_core::{Stats, TypeReport};

use crate::diagnosis::Finding;
use crate::watchdog::StuckWorker;

/// Live counters of the rarer events, shared by the workers (each worker counts its outcomes
/// in its own shard).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) blocking_overruns: AtomicU64,
    pub(crate) blocking_overruns_running: AtomicU64,
    pub(crate) worker_panics: AtomicU64,
}

impl Counters {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// A snapshot of a pool: handler outcomes, per-type latencies and suggested timeouts, and the
/// queue's own stats.
#[derive(Clone, Debug, Default, PartialEq)]
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
    /// Per item type (in name order): outcomes, latency quantiles, timeout rate, suggested
    /// item timeout.
    pub types: Vec<(&'static str, TypeReport)>,
    /// The queue's stats at the same moment.
    pub queue: Stats,
}

impl PoolStats {
    /// Handlings of every outcome.
    pub fn handled(&self) -> u64 {
        self.ok + self.failed + self.timed_out + self.panicked + self.permanent
    }
}

/// What [`Pool::shutdown`](crate::Pool::shutdown) reports.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PoolReport {
    /// The final snapshot.
    pub stats: PoolStats,
    /// How long the shutdown took.
    pub took: Duration,
    /// Workers whose item was still running at the end of the grace period; each such item
    /// was handed back to the queue (reason "dropped"; the attempt counts).
    pub handed_back: usize,
    /// Every stuck-worker report of the pool's life.
    pub stuck: Vec<StuckWorker>,
    /// Plain-words verdicts on the settings (see [`diagnose`](crate::diagnose)).
    pub diagnosis: Vec<Finding>,
}
