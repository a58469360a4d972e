//! The in-memory store's driver step: deadlines, heartbeats, events and metrics, in one
//! critical section, with what must not run under the lock (tracing, metrics) after it.

use std::sync::atomic::Ordering;

use leaseq_core::Timestamp;

use super::MemoryStore;
use crate::runtime::Runtime;
use crate::store::Drive;

impl<T, R: Runtime> MemoryStore<T, R> {
    /// Under the lock: the metrics' snapshot, if one is due at `now` (with `now_anyway`: if
    /// anything changed), to publish once the lock is released. Leaves the `poked` flag
    /// saying whether a publication is scheduled, so that plain pushes wake the driver when
    /// none is; a push that went into the inbox after this lock's holder drained it
    /// schedules one.
    #[cfg(feature = "metrics")]
    pub(super) fn snapshot_due(
        &self,
        st: &mut super::State<T>,
        now: Timestamp,
        now_anyway: bool,
    ) -> Option<(u64, crate::metrics::Snapshot)> {
        let snapshot = st.publish.take(&st.core, now, now_anyway);
        if st.publish.at == Timestamp::MAX {
            // Sequentially consistent with `QueueMetrics::poke` (see there).
            self.metrics.poked.store(false, Ordering::SeqCst);
            if self.inbox.pending() {
                st.publish.arm();
            }
        }
        if st.publish.at != Timestamp::MAX {
            self.metrics.poked.store(true, Ordering::SeqCst);
        }
        snapshot
    }

    /// [`Store::stats`](crate::Store::stats): the core's counts, the time applied first. A
    /// read publishes the metrics at once (after the lock): right after it, they agree.
    pub(super) fn stats_now(&self) -> leaseq_core::Stats {
        let now = self.rt.now();
        let mut st = self.lock();
        st.core.handle_timeout(now);
        let stats = st.core.stats();
        #[cfg(feature = "metrics")]
        let snapshot = self.snapshot_due(&mut st, now, true);
        drop(st);
        #[cfg(feature = "metrics")]
        if let Some(snapshot) = snapshot {
            self.metrics.publish(snapshot);
        }
        stats
    }

    /// One driver step: deadlines, then heartbeats, then events; when to wake next.
    ///
    /// With the `tracing` feature, the core's events (when the queue traces them) and any
    /// growth of `Stats::events_dropped` are taken under the lock and emitted after it is
    /// released: a subscriber never runs under the queue's lock.
    pub(super) fn drive_step(&self) -> Drive {
        let mut guard = self.lock();
        let st = &mut *guard;
        let now = self.rt.now();
        st.core.handle_timeout(now);
        if st.core.has_noted_dead() {
            self.record_dead(st);
        }
        let beat = st
            .beats
            .run_due(&mut st.core, now, self.heartbeat_every, self.visibility)
            .unwrap_or(Timestamp::MAX);
        #[cfg(feature = "tracing")]
        let (events, dropped) = {
            let mut events = Vec::new();
            if self.traces_events {
                events.extend(std::iter::from_fn(|| st.core.poll_event()));
            }
            let total = st.core.stats().events_dropped;
            let dropped = total - st.events_dropped_seen;
            st.events_dropped_seen = total;
            (events, (dropped, total))
        };
        let done = st.beats.len() == 0 && self.handles.load(Ordering::Acquire) == 0;
        // The metrics, when due (and a last time before the driver ends).
        #[cfg(feature = "metrics")]
        let snapshot = self.snapshot_due(st, now, done);
        let mut next = st.core.poll_timeout().unwrap_or(Timestamp::MAX).min(beat);
        // The record's entries whose window has passed, and when the next one goes.
        if let Some(history) = &self.history {
            next = next.min(history.remove_old(now));
        }
        #[cfg(feature = "metrics")]
        let next = next.min(st.publish.at);
        st.alarm = next;
        #[cfg(feature = "tracing")]
        let capacity = st.core.config().event_capacity();
        drop(guard);
        #[cfg(feature = "metrics")]
        if let Some(snapshot) = snapshot {
            self.metrics.publish(snapshot);
        }
        #[cfg(feature = "tracing")]
        {
            for event in &events {
                crate::trace::event(self.name, event);
            }
            if dropped.0 > 0 {
                crate::trace::events_dropped(self.name, dropped.0, dropped.1, capacity);
            }
        }
        Drive { next, done }
    }
}
