//! What a pool counts while it runs (the snapshot is [`PoolStats`](crate::PoolStats), the
//! final report [`PoolReport`](crate::PoolReport)).

use std::sync::atomic::{AtomicU64, Ordering};

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
