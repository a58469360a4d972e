//! The watchdog: reports workers that stop making progress.
//!
//! Every worker records progress after every item and while idle. A worker that has held
//! one item for longer than the limit without finishing is reported once per item, within one
//! watchdog interval, with the item it holds. That catches what an item timeout cannot: a
//! handler that blocks its thread (so no timer fires on it), or a pool without item timeouts.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_core::{MessageId, Timestamp};

use crate::runtime::Runtime;

/// Watchdog settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watchdog {
    /// How often to look.
    pub interval: Duration,
    /// How long a worker may hold one item before it is reported.
    pub limit: Duration,
}

impl Watchdog {
    /// Looks every `interval`; reports workers busy with one item for longer than `limit`.
    pub const fn new(interval: Duration, limit: Duration) -> Self {
        Watchdog { interval, limit }
    }
}

/// The item a worker holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Holding {
    /// The item's message id.
    pub id: MessageId,
    /// Its type, as the pool's type function names it.
    pub item_type: &'static str,
    /// When the worker started on it.
    pub since: Timestamp,
}

/// A worker the watchdog found stuck.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StuckWorker {
    /// The worker's index in its pool.
    pub worker: usize,
    /// How long it had been silent when reported.
    pub silent_for: Duration,
    /// What it holds.
    pub holding: Holding,
    /// When it was reported.
    pub at: Timestamp,
}

/// One worker's progress, written by the worker, read by the watchdog.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    holding: Mutex<Option<Holding>>,
    reported: AtomicBool,
    last: AtomicU64,
}

impl Progress {
    pub(crate) fn idle(&self, now: Timestamp) {
        self.last.store(now.as_nanos(), Ordering::Relaxed);
        *self.holding.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    pub(crate) fn busy(&self, holding: Holding) {
        self.last.store(holding.since.as_nanos(), Ordering::Relaxed);
        self.reported.store(false, Ordering::Relaxed);
        *self.holding.lock().unwrap_or_else(|e| e.into_inner()) = Some(holding);
    }

    pub(crate) fn holding(&self) -> Option<Holding> {
        *self.holding.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Progress of every worker of a pool, and the reports made.
#[derive(Debug, Default)]
pub(crate) struct Board {
    pub(crate) workers: Vec<Progress>,
    pub(crate) reports: Mutex<Vec<StuckWorker>>,
    pub(crate) stuck_reports: AtomicU64,
}

impl Board {
    pub(crate) fn new(workers: usize) -> Self {
        Board {
            workers: (0..workers).map(|_| Progress::default()).collect(),
            ..Board::default()
        }
    }

    /// Reports every worker silent beyond `limit` at `now` that was not reported for its
    /// current item yet; returns how many were reported.
    pub(crate) fn inspect(&self, now: Timestamp, limit: Duration) -> usize {
        let mut found = 0;
        for (worker, p) in self.workers.iter().enumerate() {
            let Some(holding) = p.holding() else { continue };
            let last = Timestamp::from_nanos(p.last.load(Ordering::Relaxed));
            let silent_for = now.saturating_duration_since(last);
            if silent_for > limit && !p.reported.swap(true, Ordering::Relaxed) {
                let report = StuckWorker {
                    worker,
                    silent_for,
                    holding,
                    at: now,
                };
                #[cfg(feature = "tracing")]
                tracing::warn!(
                    worker,
                    silent_for = ?silent_for,
                    item = %holding.id,
                    item_type = holding.item_type,
                    "leaseq: worker stuck"
                );
                self.reports
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(report);
                self.stuck_reports.fetch_add(1, Ordering::Relaxed);
                found += 1;
            }
        }
        found
    }
}

/// The watchdog task: inspects the board every interval until `done` is set.
pub(crate) async fn run<R: Runtime>(
    rt: R,
    board: Arc<Board>,
    config: Watchdog,
    done: Arc<AtomicBool>,
) {
    let interval = config.interval.max(Duration::from_millis(1));
    let mut next = rt.now().saturating_add(interval);
    while !done.load(Ordering::Acquire) {
        rt.sleep_until(next).await;
        let now = rt.now();
        board.inspect(now, config.limit);
        next = now.saturating_add(interval);
    }
}
