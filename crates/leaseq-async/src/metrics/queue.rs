//! The queue's recording: its metric handles, and when and what it publishes.

use std::sync::atomic::{AtomicBool, Ordering};

use ::metrics::{counter, gauge, Counter, Gauge};
use leaseq_core::{Queue, Reason, Stats, Timestamp};
use parking_lot::Mutex;

use super::*;

/// What a queue publishes: its stats, its dead letters by reason, and how long its oldest
/// ready item has waited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Snapshot {
    stats: Stats,
    dead_by: [u64; Reason::ALL.len()],
    /// Nanoseconds since the oldest ready item became ready (0: none ready).
    oldest_ready_age: u64,
}

impl Snapshot {
    fn of<T>(core: &Queue<T>, now: Timestamp) -> Self {
        Snapshot {
            stats: core.stats(),
            dead_by: Reason::ALL.map(|r| core.dead_lettered_by(r)),
            oldest_ready_age: core.oldest_ready_since().map_or(0, |since| {
                now.saturating_duration_since(since)
                    .as_nanos()
                    .try_into()
                    .unwrap_or(u64::MAX)
            }),
        }
    }
}

/// A counter's handle and how to read its value off a snapshot.
type Tracked = (Counter, fn(&Snapshot) -> u64);
/// A gauge's handle and how to read its value off a snapshot.
type TrackedGauge = (Gauge, fn(&Snapshot) -> f64);

/// A queue's metric handles (registered when the queue is built) and what it last
/// published.
pub(crate) struct QueueMetrics {
    counters: Vec<Tracked>,
    dead_lettered: [Counter; Reason::ALL.len()],
    gauges: [TrackedGauge; 6],
    /// The last publication's number and snapshot.
    published: Mutex<(u64, Snapshot)>,
    /// Set while the driver is sure to publish (woken, or a publication scheduled), so
    /// that plain pushes, which skip the queue's lock, wake it only once.
    pub(crate) poked: AtomicBool,
}

impl QueueMetrics {
    pub(crate) fn new(queue: &'static str) -> Self {
        let c = |name: &'static str| counter!(name, "queue" => queue);
        let g = |name: &'static str| gauge!(name, "queue" => queue);
        let counters: Vec<Tracked> = vec![
            (c(PUSHED), |s| s.stats.pushed),
            (c(REJECTED), |s| s.stats.rejected),
            (c(DELIVERED), |s| s.stats.delivered),
            (c(REDELIVERED), |s| s.stats.redelivered),
            (c(ACKED), |s| s.stats.acked),
            (c(NACKED), |s| s.stats.nacks),
            (c(LEASE_EXPIRED), |s| s.stats.lease_expired),
            (
                counter!(LATE_ACKS, "queue" => queue, "outcome" => "unclaimed"),
                |s| s.stats.late_acks_unclaimed,
            ),
            (
                counter!(LATE_ACKS, "queue" => queue, "outcome" => "stale"),
                |s| s.stats.late_acks_stale,
            ),
            (c(UNKNOWN_RECEIPTS), |s| s.stats.unknown_receipts),
            (c(EXTENDS), |s| s.stats.extends),
            (c(EXTENDS_CAPPED), |s| s.stats.extends_capped),
            (c(REDRIVEN), |s| s.stats.redriven),
            (c(DEAD_LETTERS_TAKEN), |s| s.stats.taken),
            (c(EVENTS_DROPPED), |s| s.stats.events_dropped),
            (c(CANCELLED), |s| s.stats.cancelled),
            (c(REPLACED), |s| s.stats.replaced),
            (c(DUPLICATES), |s| s.stats.duplicates),
        ];
        QueueMetrics {
            counters,
            dead_lettered: Reason::ALL
                .map(|r| counter!(DEAD_LETTERED, "queue" => queue, "reason" => reason_label(r))),
            gauges: [
                (g(READY), |s| s.stats.ready as f64),
                (g(DELAYED), |s| s.stats.delayed as f64),
                (g(IN_FLIGHT), |s| s.stats.in_flight as f64),
                (g(DEAD), |s| s.stats.dead as f64),
                (g(PAUSED), |s| f64::from(u8::from(s.stats.paused))),
                (g(OLDEST_READY_AGE_SECONDS), |s| {
                    s.oldest_ready_age as f64 / 1e9
                }),
            ],
            published: Mutex::new((0, Snapshot::default())),
            poked: AtomicBool::new(false),
        }
    }

    /// Publishes the change from the last publication to `snapshot`, number `seq`
    /// (taken under the queue's lock; called after it is released). A snapshot older
    /// than the last one published is skipped.
    pub(crate) fn publish(&self, (seq, now): (u64, Snapshot)) {
        let mut published = self.published.lock();
        if seq <= published.0 {
            return;
        }
        let before = &published.1;
        for (counter, read) in &self.counters {
            let increase = read(&now).saturating_sub(read(before));
            if increase > 0 {
                counter.increment(increase);
            }
        }
        for (i, counter) in self.dead_lettered.iter().enumerate() {
            let increase = now.dead_by[i].saturating_sub(before.dead_by[i]);
            if increase > 0 {
                counter.increment(increase);
            }
        }
        Self::move_gauges(&self.gauges, before, &now);
        *published = (seq, now);
    }

    /// Moves each gauge by its change from `before` to `now`: by changes, not settings,
    /// so that queues of the same name add up.
    fn move_gauges(gauges: &[TrackedGauge], before: &Snapshot, now: &Snapshot) {
        for (gauge, read) in gauges {
            let (was, is) = (read(before), read(now));
            if is != was {
                gauge.increment(is - was);
            }
        }
    }

    /// A plain push went into the inbox, past the queue's lock: makes sure the driver
    /// runs, and so publishes it, unless it is sure to already.
    #[inline]
    pub(crate) fn poke(&self, driver: &event_listener::Event) {
        // Sequentially consistent, as the inbox's flag and `MemoryStore::snapshot_due`:
        // either this push sees the flag cleared, or the store sees the push waiting.
        if !self.poked.load(Ordering::SeqCst) && !self.poked.swap(true, Ordering::SeqCst) {
            driver.notify(1);
        }
    }

    /// The queue is going away: publishes its last snapshot (`last`, if there is one
    /// left to publish), then takes what it published back off the gauges.
    pub(crate) fn retire(&self, last: Option<(u64, Snapshot)>) {
        if let Some(last) = last {
            self.publish(last);
        }
        let published = self.published.lock();
        Self::move_gauges(&self.gauges, &published.1, &Snapshot::default());
    }
}

/// When the queue publishes next; kept under its lock.
#[derive(Debug)]
pub(crate) struct PublishState {
    /// The stats of the last snapshot taken.
    snapped: Stats,
    /// The number of the last snapshot taken.
    seq: u64,
    /// When the next snapshot is due; `Timestamp::MAX` while nothing changed.
    pub(crate) at: Timestamp,
    /// When the last snapshot was taken.
    last: Option<Timestamp>,
}

impl Default for PublishState {
    fn default() -> Self {
        PublishState {
            snapped: Stats::default(),
            seq: 0,
            at: Timestamp::MAX,
            last: None,
        }
    }
}

impl PublishState {
    /// As the queue's lock is released, with the stats it leaves: schedules a
    /// publication if they changed since the last snapshot (one compare once one is
    /// scheduled). It is due [`PUBLISH_EVERY`] after the last one, at once if that is
    /// past.
    #[inline]
    pub(crate) fn note(&mut self, stats: &Stats) {
        if self.at == Timestamp::MAX && *stats != self.snapped {
            self.arm();
        }
    }

    /// Schedules a publication, unless one is: [`PUBLISH_EVERY`] after the last one, at
    /// once if that is past.
    pub(crate) fn arm(&mut self) {
        if self.at == Timestamp::MAX {
            self.at = self
                .last
                .map_or(Timestamp::ZERO, |last| last.saturating_add(PUBLISH_EVERY));
        }
    }

    /// A snapshot to publish, if one is due at `now` (or, with `now_anyway`, if the
    /// stats changed at all since the last).
    pub(crate) fn take<T>(
        &mut self,
        core: &Queue<T>,
        now: Timestamp,
        now_anyway: bool,
    ) -> Option<(u64, Snapshot)> {
        let snapshot = Snapshot::of(core, now);
        self.note(&snapshot.stats);
        if self.at == Timestamp::MAX || (self.at > now && !now_anyway) {
            return None;
        }
        self.seq += 1;
        self.snapped = snapshot.stats;
        self.last = Some(now);
        // While items are ready, the next one is due all the same: their age moves.
        self.at = if snapshot.stats.ready > 0 {
            now.saturating_add(PUBLISH_EVERY)
        } else {
            Timestamp::MAX
        };
        Some((self.seq, snapshot))
    }
}
