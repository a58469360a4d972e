//! Metrics: the names leaseq reports through the [`metrics`](https://docs.rs/metrics)
//! facade (feature `metrics`).
//!
//! With the feature on, every queue and pool reports counters, gauges and histograms to the
//! `metrics` recorder installed when it was built (a Prometheus exporter, say): install the
//! recorder first. Without a recorder nothing is recorded, and the cost is a few loads.
//! [`describe`] gives the recorder a unit and a description for each name (Prometheus'
//! `HELP` lines).
//!
//! Every metric carries the label `queue`: the queue's name, set with
//! [`QueueBuilder::name`](crate::QueueBuilder::name) (default `"leaseq"`). Name each queue of a
//! process differently; queues with the same name add up, gauges included.
//!
//! # Queue metrics
//!
//! Each is a [`Stats`](leaseq_core::Stats) field, so a scrape agrees with
//! [`LeaseQueue::stats`](crate::LeaseQueue::stats) (and with the conservation law).
//!
//! | name | kind | labels | what (the `Stats` field) |
//! | --- | --- | --- | --- |
//! | `leaseq_pushed_total` | counter | `queue` | items accepted by push (`pushed`) |
//! | `leaseq_rejected_total` | counter | `queue` | pushes refused (`rejected`) |
//! | `leaseq_delivered_total` | counter | `queue` | deliveries, first ones and repeats (`delivered`) |
//! | `leaseq_redelivered_total` | counter | `queue` | deliveries after the first (`redelivered`) |
//! | `leaseq_acked_total` | counter | `queue` | items acked (`acked`) |
//! | `leaseq_nacked_total` | counter | `queue` | attempts handed back early: nack, release, timeout, drop (`nacks`) |
//! | `leaseq_lease_expired_total` | counter | `queue` | leases that ran out before an ack (`lease_expired`) |
//! | `leaseq_dead_lettered_total` | counter | `queue`, `reason` | items sent to the dead letters, by [`Reason`](leaseq_core::Reason): `lease_expired`, `nacked`, `timed_out`, `dropped`, `released`, `terminated`, `panicked`, `expired` (they add up to `dead_lettered`; `expired` is `expired`) |
//! | `leaseq_late_acks_total` | counter | `queue`, `kind` | acks after the lease ended: `unclaimed` (accepted, `late_acks_unclaimed`) or `stale` (refused, `late_acks_stale`) |
//! | `leaseq_unknown_receipts_total` | counter | `queue` | receipts not recognized at all (`unknown_receipts`) |
//! | `leaseq_extends_total` | counter | `queue` | successful extends, heartbeats included (`extends`) |
//! | `leaseq_extends_capped_total` | counter | `queue` | extends cut short by the max lease lifetime or the item's expiry (`extends_capped`) |
//! | `leaseq_redriven_total` | counter | `queue` | dead letters put back (`redriven`) |
//! | `leaseq_dead_letters_taken_total` | counter | `queue` | dead letters removed by their owner (`taken`) |
//! | `leaseq_events_dropped_total` | counter | `queue` | core events dropped from a full buffer (`events_dropped`) |
//! | `leaseq_cancelled_total` | counter | `queue` | items removed by a cancel or replaced by a push (`cancelled`) |
//! | `leaseq_replaced_total` | counter | `queue` | items replaced by a push with their unique key (`replaced`, also in `cancelled`) |
//! | `leaseq_duplicates_total` | counter | `queue` | pushes refused for a unique key held by a live item (`duplicates`, also in `rejected`) |
//! | `leaseq_ready` | gauge | `queue` | items waiting for a receive (`ready`) |
//! | `leaseq_delayed` | gauge | `queue` | items waiting out a delay or backoff (`delayed`) |
//! | `leaseq_in_flight` | gauge | `queue` | items on lease (`in_flight`) |
//! | `leaseq_dead` | gauge | `queue` | dead letters kept (`dead`) |
//!
//! # Pool metrics
//!
//! | name | kind | labels | what |
//! | --- | --- | --- | --- |
//! | `leaseq_pool_handled_total` | counter | `queue`, `type`, `outcome` | handlings, by item type (the pool's [`item_type`](crate::PoolBuilder::item_type)) and outcome: `ok`, `failed` (retryable error), `permanent` (permanent error), `timed_out`, `panicked`; they add up to the [`PoolStats`](crate::PoolStats) outcome counts |
//! | `leaseq_pool_handling_seconds` | histogram | `queue`, `type` | how long each handling took, from the lease to the handler's end, whatever the outcome (a timed-out run counts its limit) |
//!
//! # When they are updated
//!
//! The pool records each handling as it ends: one counter increment and one histogram
//! record per item, on handles each worker keeps per item type.
//!
//! The queue costs nothing per item: it publishes the change of its stats since the last
//! publication (counters by their increase, gauges by their change), from its driver task,
//! outside the queue's lock, at most once every [`PUBLISH_EVERY`] while the queue changes
//! (an operation that changes the stats makes sure the driver will run by then; an idle
//! queue publishes nothing). A [`LeaseQueue::stats`](crate::LeaseQueue::stats) or
//! [`Pool::stats`](crate::Pool::stats) call publishes at once, so right after one, the
//! metrics equal the stats it returned. When the queue goes away, what it last published is
//! taken back off its gauges.
#![cfg_attr(
    not(feature = "metrics"),
    doc = "",
    doc = "[`describe`]: https://docs.rs/leaseq-async/latest/leaseq_async/metrics/fn.describe.html"
)]

use std::time::Duration;

/// `leaseq_pushed_total`: items accepted by push.
pub const PUSHED: &str = "leaseq_pushed_total";
/// `leaseq_rejected_total`: pushes refused.
pub const REJECTED: &str = "leaseq_rejected_total";
/// `leaseq_delivered_total`: deliveries, first ones and repeats.
pub const DELIVERED: &str = "leaseq_delivered_total";
/// `leaseq_redelivered_total`: deliveries after the first.
pub const REDELIVERED: &str = "leaseq_redelivered_total";
/// `leaseq_acked_total`: items acked.
pub const ACKED: &str = "leaseq_acked_total";
/// `leaseq_nacked_total`: attempts handed back early (nack, release, timeout, drop).
pub const NACKED: &str = "leaseq_nacked_total";
/// `leaseq_lease_expired_total`: leases that ran out before an ack.
pub const LEASE_EXPIRED: &str = "leaseq_lease_expired_total";
/// `leaseq_dead_lettered_total{reason}`: items sent to the dead letters, by reason.
pub const DEAD_LETTERED: &str = "leaseq_dead_lettered_total";
/// `leaseq_late_acks_total{kind}`: acks after the lease ended, `unclaimed` or `stale`.
pub const LATE_ACKS: &str = "leaseq_late_acks_total";
/// `leaseq_unknown_receipts_total`: receipts not recognized at all.
pub const UNKNOWN_RECEIPTS: &str = "leaseq_unknown_receipts_total";
/// `leaseq_extends_total`: successful extends.
pub const EXTENDS: &str = "leaseq_extends_total";
/// `leaseq_extends_capped_total`: extends cut short.
pub const EXTENDS_CAPPED: &str = "leaseq_extends_capped_total";
/// `leaseq_redriven_total`: dead letters put back.
pub const REDRIVEN: &str = "leaseq_redriven_total";
/// `leaseq_dead_letters_taken_total`: dead letters removed by their owner.
pub const DEAD_LETTERS_TAKEN: &str = "leaseq_dead_letters_taken_total";
/// `leaseq_events_dropped_total`: core events dropped from a full buffer.
pub const EVENTS_DROPPED: &str = "leaseq_events_dropped_total";
/// `leaseq_cancelled_total`: items removed by a cancel or replaced by a push.
pub const CANCELLED: &str = "leaseq_cancelled_total";
/// `leaseq_replaced_total`: items replaced by a push with their unique key.
pub const REPLACED: &str = "leaseq_replaced_total";
/// `leaseq_duplicates_total`: pushes refused for a unique key held by a live item.
pub const DUPLICATES: &str = "leaseq_duplicates_total";
/// `leaseq_ready`: items waiting for a receive.
pub const READY: &str = "leaseq_ready";
/// `leaseq_delayed`: items waiting out a delay or backoff.
pub const DELAYED: &str = "leaseq_delayed";
/// `leaseq_in_flight`: items on lease.
pub const IN_FLIGHT: &str = "leaseq_in_flight";
/// `leaseq_dead`: dead letters kept.
pub const DEAD: &str = "leaseq_dead";
/// `leaseq_pool_handled_total{type,outcome}`: pool handlings by item type and outcome.
pub const POOL_HANDLED: &str = "leaseq_pool_handled_total";
/// `leaseq_pool_handling_seconds{type}`: how long each pool handling took.
pub const POOL_HANDLING_SECONDS: &str = "leaseq_pool_handling_seconds";

/// The longest a queue's metrics lag behind its stats while it changes.
pub const PUBLISH_EVERY: Duration = Duration::from_secs(1);

/// The label value of a dead-letter reason (`reason` label).
pub fn reason_label(reason: leaseq_core::Reason) -> &'static str {
    use leaseq_core::Reason;
    match reason {
        Reason::LeaseExpired => "lease_expired",
        Reason::Nacked => "nacked",
        Reason::TimedOut => "timed_out",
        Reason::Dropped => "dropped",
        Reason::Released => "released",
        Reason::Terminated => "terminated",
        Reason::Panicked => "panicked",
        Reason::Expired => "expired",
        _ => "other",
    }
}

#[cfg(feature = "metrics")]
pub use imp::describe;
#[cfg(feature = "metrics")]
pub(crate) use imp::{PoolMetrics, PublishState, QueueMetrics, Snapshot};

#[cfg(feature = "metrics")]
mod imp {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use ::metrics::{
        counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram, Counter,
        Gauge, Histogram, Unit,
    };
    use leaseq_core::{Outcome, Queue, Reason, Stats, Timestamp};
    use parking_lot::Mutex;

    use super::*;

    /// Gives the installed recorder a unit and a description for every name leaseq reports
    /// (what Prometheus shows as `HELP`). Optional; call it once, after installing the
    /// recorder.
    pub fn describe() {
        let counters: [(&'static str, &'static str); 18] = [
            (PUSHED, "Items accepted by push."),
            (REJECTED, "Pushes refused."),
            (DELIVERED, "Deliveries, first ones and repeats."),
            (REDELIVERED, "Deliveries after the first."),
            (ACKED, "Items acked."),
            (
                NACKED,
                "Attempts handed back early (nack, release, timeout, drop).",
            ),
            (LEASE_EXPIRED, "Leases that ran out before an ack."),
            (DEAD_LETTERED, "Items sent to the dead letters, by reason."),
            (
                LATE_ACKS,
                "Acks after the lease ended: unclaimed (accepted) or stale (refused).",
            ),
            (UNKNOWN_RECEIPTS, "Receipts not recognized at all."),
            (EXTENDS, "Successful lease extends."),
            (
                EXTENDS_CAPPED,
                "Extends cut short by the max lease lifetime or the item's expiry.",
            ),
            (REDRIVEN, "Dead letters put back into the queue."),
            (DEAD_LETTERS_TAKEN, "Dead letters removed by their owner."),
            (EVENTS_DROPPED, "Core events dropped from a full buffer."),
            (
                CANCELLED,
                "Items removed by a cancel or replaced by a push.",
            ),
            (REPLACED, "Items replaced by a push with their unique key."),
            (
                DUPLICATES,
                "Pushes refused for a unique key held by a live item.",
            ),
        ];
        for (name, help) in counters {
            describe_counter!(name, Unit::Count, help);
        }
        describe_counter!(
            POOL_HANDLED,
            Unit::Count,
            "Pool handlings, by item type and outcome."
        );
        let gauges: [(&'static str, &'static str); 4] = [
            (READY, "Items waiting for a receive."),
            (DELAYED, "Items waiting out a delay or backoff."),
            (IN_FLIGHT, "Items on lease."),
            (DEAD, "Dead letters kept."),
        ];
        for (name, help) in gauges {
            describe_gauge!(name, Unit::Count, help);
        }
        describe_histogram!(
            POOL_HANDLING_SECONDS,
            Unit::Seconds,
            "How long each pool handling took, by item type."
        );
    }

    /// What a queue publishes: its stats and its dead letters by reason.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub(crate) struct Snapshot {
        stats: Stats,
        dead_by: [u64; Reason::ALL.len()],
    }

    impl Snapshot {
        fn of<T>(core: &Queue<T>) -> Self {
            Snapshot {
                stats: core.stats(),
                dead_by: Reason::ALL.map(|r| core.dead_lettered_by(r)),
            }
        }
    }

    /// A counter's handle and how to read its value off a snapshot.
    type Tracked = (Counter, fn(&Snapshot) -> u64);
    /// A gauge's handle and how to read its value off the stats.
    type TrackedGauge = (Gauge, fn(&Stats) -> u64);

    /// A queue's metric handles (registered when the queue is built) and what it last
    /// published.
    pub(crate) struct QueueMetrics {
        counters: Vec<Tracked>,
        dead_lettered: [Counter; Reason::ALL.len()],
        gauges: [TrackedGauge; 4],
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
                    counter!(LATE_ACKS, "queue" => queue, "kind" => "unclaimed"),
                    |s| s.stats.late_acks_unclaimed,
                ),
                (
                    counter!(LATE_ACKS, "queue" => queue, "kind" => "stale"),
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
                dead_lettered: Reason::ALL.map(
                    |r| counter!(DEAD_LETTERED, "queue" => queue, "reason" => reason_label(r)),
                ),
                gauges: [
                    (g(READY), |s| s.ready),
                    (g(DELAYED), |s| s.delayed),
                    (g(IN_FLIGHT), |s| s.in_flight),
                    (g(DEAD), |s| s.dead),
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
            Self::move_gauges(&self.gauges, &before.stats, &now.stats);
            *published = (seq, now);
        }

        /// Moves each gauge by its change from `before` to `now`: by changes, not settings,
        /// so that queues of the same name add up.
        fn move_gauges(gauges: &[TrackedGauge], before: &Stats, now: &Stats) {
            for (gauge, read) in gauges {
                let (was, is) = (read(before), read(now));
                if is != was {
                    gauge.increment(is as f64 - was as f64);
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
            Self::move_gauges(&self.gauges, &published.1.stats, &Stats::default());
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
            let snapshot = Snapshot::of(core);
            self.note(&snapshot.stats);
            if self.at == Timestamp::MAX || (self.at > now && !now_anyway) {
                return None;
            }
            self.seq += 1;
            self.snapped = snapshot.stats;
            self.at = Timestamp::MAX;
            self.last = Some(now);
            Some((self.seq, snapshot))
        }
    }

    /// The handles of one item type, as one worker keeps them.
    struct TypeHandles {
        item_type: &'static str,
        /// By outcome: ok, failed, permanent, timed out, panicked.
        handled: [Counter; 5],
        seconds: Histogram,
    }

    const OUTCOMES: [&str; 5] = ["ok", "failed", "permanent", "timed_out", "panicked"];

    /// One worker's pool metrics: handles registered on the first item of each type.
    pub(crate) struct PoolMetrics {
        queue: &'static str,
        types: Vec<TypeHandles>,
    }

    impl PoolMetrics {
        pub(crate) fn new(queue: &'static str) -> Self {
            PoolMetrics {
                queue,
                types: Vec::new(),
            }
        }

        /// Records one handling.
        pub(crate) fn record(
            &mut self,
            item_type: &'static str,
            took: Duration,
            outcome: Outcome,
            permanent: bool,
        ) {
            let at = match self.types.iter().position(|t| t.item_type == item_type) {
                Some(at) => at,
                None => {
                    let queue = self.queue;
                    self.types.push(TypeHandles {
                        item_type,
                        handled: OUTCOMES.map(|outcome| {
                            counter!(POOL_HANDLED, "queue" => queue, "type" => item_type,
                                "outcome" => outcome)
                        }),
                        seconds: histogram!(POOL_HANDLING_SECONDS, "queue" => queue,
                            "type" => item_type),
                    });
                    self.types.len() - 1
                }
            };
            let handles = &self.types[at];
            let outcome = match outcome {
                Outcome::Ok => 0,
                Outcome::Failed if permanent => 2,
                Outcome::Failed => 1,
                Outcome::TimedOut => 3,
                Outcome::Panicked => 4,
                _ => 4,
            };
            handles.handled[outcome].increment(1);
            handles.seconds.record(took.as_secs_f64());
        }
    }
}
