//! [`PoolReport`]: what a pool reports at the end.

use std::time::Duration;

use crate::diagnosis::Finding;
use crate::pool_stats::PoolStats;
use crate::watchdog::StuckWorker;

/// What [`Pool::shutdown`](crate::Pool::shutdown) reports.
///
/// With the `serde` feature it serializes, but does not deserialize (the item types in its
/// [`PoolStats`] and stuck workers are `&'static str`).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct PoolReport {
    /// The final snapshot.
    pub stats: PoolStats,
    /// How long the shutdown took.
    pub took: Duration,
    /// Workers whose item was still running at the end of the grace period; each such item
    /// was handed back to the queue (reason "dropped"; the attempt counts).
    pub handed_back: usize,
    /// The items those workers held, when the pool's watchdog was on (it tracks what each
    /// worker holds); empty without one.
    pub handed_back_items: Vec<leaseq_core::MessageId>,
    /// Every stuck-worker report of the pool's life.
    pub stuck: Vec<StuckWorker>,
    /// Plain-words verdicts on the settings (see [`diagnose`](crate::diagnose)).
    pub diagnosis: Vec<Finding>,
}
