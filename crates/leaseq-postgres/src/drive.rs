//! `Store::drive` for a [`PgStore`]: which of the keeper's jobs are due, running them, and
//! when to wake next.

use std::sync::atomic::Ordering;

use leaseq_async::{Drive, Runtime};
use leaseq_core::Timestamp;

use crate::keeper::{self, Due};
use crate::store::PgStore;

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    /// One driver step: the heartbeat when due (and leases are held), the rescuer when
    /// due, the row counts when someone waits for them.
    pub(crate) async fn drive_step(&self) -> Drive {
        {
            let shared = &self.shared;
            let vis = shared.config.visibility();
            let now = shared.rt.now();
            let (due, next) = {
                let mut s = self.schedule.lock();
                let beat = now >= s.beat;
                let rescue = now >= s.rescue;
                if beat {
                    s.beat = keeper::after(now, shared.options.beat_period(vis));
                }
                if rescue {
                    s.rescue = keeper::after(now, shared.options.rescue_period(vis));
                }
                // Someone waiting for an empty queue: every rescue tick. Someone reading
                // the stats: at most every `stats_every` (a count reads every row of the
                // queue).
                let waiting = shared.empty_waiters.load(Ordering::Relaxed) > 0;
                let reading = now >= s.count && shared.stats_wanted.load(Ordering::Relaxed);
                let count = rescue && (waiting || reading);
                if count {
                    shared.stats_wanted.store(false, Ordering::Relaxed);
                    s.count = keeper::after(now, shared.options.stats_every);
                }
                (
                    Due {
                        beat,
                        rescue,
                        count,
                    },
                    s.beat.min(s.rescue),
                )
            };
            // An ack whose future was dropped before its first poll queued its op and ran
            // no batch: the settler task looks at least once a tick.
            shared.settle_queued.notify(1);
            if due.beat || due.rescue || due.count {
                if let Err(e) = keeper::step(shared, due).await {
                    shared.failed("driver", e);
                }
            }
            let done = self.handles.load(Ordering::Acquire) == 0 && shared.held.lock().is_empty();
            Drive {
                next: if done { Timestamp::MAX } else { next },
                done,
            }
        }
    }
}
