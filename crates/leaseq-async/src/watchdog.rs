//! The watchdog: reports workers that stop making progress.
//!
//! Every worker records the item it takes and when it is done with it. A worker that has held
//! one item for longer than the limit without finishing is reported once per item, within one
//! watchdog interval, with the item it holds. That catches what an item timeout cannot: a
//! handler that blocks its thread (so no timer fires on it), or a pool without item timeouts.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use leaseq_core::{MessageId, Timestamp};
use parking_lot::Mutex;

use crate::runtime::Runtime;

/// Watchdog settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Watchdog {
    /// How often to look.
    pub interval: Duration,
    /// How long a worker may hold one item before it is reported.
    pub limit: Duration,
}

impl Default for Watchdog {
    /// Looks every second; reports a worker that has held one item for over a minute.
    fn default() -> Self {
        Watchdog::new(Duration::from_secs(1), Duration::from_secs(60))
    }
}

impl Watchdog {
    /// Looks every `interval`; reports workers busy with one item for longer than `limit`.
    pub const fn new(interval: Duration, limit: Duration) -> Self {
        Watchdog { interval, limit }
    }
}

/// The item a worker holds.
///
/// With the `serde` feature it serializes, but does not deserialize (`item_type` is a
/// `&'static str`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Holding {
    /// The item's message id.
    pub id: MessageId,
    /// Its type, as the pool's type function names it.
    pub item_type: &'static str,
    /// When the worker started on it (the moment its lease was taken).
    pub since: Timestamp,
}

/// A worker the watchdog found stuck.
///
/// With the `serde` feature it serializes, but does not deserialize (see [`Holding`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
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
///
/// Per item the worker takes only its own lock, once, uncontended but for the watchdog's look
/// every interval: [`busy`](Self::busy) stores the item it holds under a new holding number,
/// then publishes that number; [`idle`](Self::idle) is one atomic store. The watchdog reads
/// the number first and the holding only if the number is still the one stored with it, so
/// it reports an item only while the worker holds it, and at most once per holding number.
/// (A `MessageId` cannot be rebuilt from an integer outside the core, so the holding itself
/// stays behind the lock rather than in atomics.)
#[derive(Debug, Default)]
pub(crate) struct Progress {
    /// The number of the current holding while the worker holds an item; 0 while idle.
    held: AtomicU64,
    /// The last holding and its number (1, 2, ...: never reused in this slot, even when a
    /// worker restarted in its place writes here too).
    holding: Mutex<(u64, Option<Holding>)>,
    /// The number of the last holding reported.
    reported: AtomicU64,
}

impl Progress {
    /// The worker holds no item.
    pub(crate) fn idle(&self) {
        self.held.store(0, Ordering::Release);
    }

    /// The worker holds `holding` now.
    pub(crate) fn busy(&self, holding: Holding) {
        let number = {
            let mut h = self.holding.lock();
            h.0 += 1;
            h.1 = Some(holding);
            h.0
        };
        self.held.store(number, Ordering::Release);
    }

    /// What the worker holds, with its holding number.
    pub(crate) fn holding(&self) -> Option<(u64, Holding)> {
        let number = self.held.load(Ordering::Acquire);
        if number == 0 {
            return None;
        }
        match *self.holding.lock() {
            // Otherwise the worker has moved on since (or is storing its next item).
            (n, Some(holding)) if n == number => Some((number, holding)),
            _ => None,
        }
    }
}

/// Progress of every worker of a pool, and the reports made.
#[derive(Debug, Default)]
pub(crate) struct Board {
    /// One per worker with a watchdog; none without one (nobody would read them).
    pub(crate) workers: Vec<Progress>,
    pub(crate) reports: Mutex<Vec<StuckWorker>>,
    pub(crate) stuck_reports: AtomicU64,
}

impl Board {
    /// A board for `workers` workers, recording their progress only if `watched`.
    pub(crate) fn new(workers: usize, watched: bool) -> Self {
        let workers = if watched { workers } else { 0 };
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
            let Some((number, holding)) = p.holding() else {
                continue;
            };
            // A worker's progress is its next item: silent since it took this one.
            let silent_for = now.saturating_duration_since(holding.since);
            if silent_for > limit && p.reported.swap(number, Ordering::Relaxed) != number {
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
                self.reports.lock().push(report);
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use leaseq_core::{Config, Queue, Timestamp};

    use super::{Board, Holding, Ordering};

    /// A worker is reported once per item, with that item, only while it holds it.
    #[test]
    fn once_per_item_and_only_while_held() {
        let ms = |n| Timestamp::ZERO.saturating_add(Duration::from_millis(n));
        let limit = Duration::from_millis(10);
        let mut q = Queue::new(Config::new(Duration::from_secs(1))).unwrap();
        let (a, b) = (q.push(1, ms(0)).unwrap(), q.push(2, ms(0)).unwrap());
        let board = Board::new(2, true);
        assert!(Board::new(2, false).workers.is_empty());
        let p = &board.workers[1];
        let held = |id, since| Holding {
            id,
            item_type: "t",
            since,
        };

        p.busy(held(a, ms(5)));
        assert_eq!(board.inspect(ms(15), limit), 0, "not beyond the limit yet");
        assert_eq!(board.inspect(ms(16), limit), 1);
        assert_eq!(board.inspect(ms(30), limit), 0, "once per item");
        let r = board.reports.lock()[0];
        assert_eq!((r.worker, r.holding, r.at), (1, held(a, ms(5)), ms(16)));
        assert_eq!(r.silent_for, Duration::from_millis(11));

        p.idle();
        assert_eq!(board.inspect(ms(100), limit), 0, "idle");
        // The same item taken again is a new holding.
        p.busy(held(a, ms(100)));
        assert_eq!(board.inspect(ms(111), limit), 1);
        p.idle();
        p.busy(held(b, ms(200)));
        assert_eq!(board.inspect(ms(205), limit), 0);
        assert_eq!(board.inspect(ms(211), limit), 1);
        assert_eq!(board.reports.lock()[2].holding, held(b, ms(200)));
        assert_eq!(board.stuck_reports.load(Ordering::Relaxed), 3);
    }
}
