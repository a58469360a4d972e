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
//! The names follow Prometheus' conventions: counters end in `_total`, durations are in
//! seconds (`_seconds`, histograms for handling times), and the labels have few values:
//! `queue`, `kind` (a job kind), `outcome`, `reason`. (Before issue 31 the pool's metrics
//! named the job kind `type` and the late acks' outcome `kind`.)
//!
//! # Queue metrics
//!
//! Each is a [`Stats`](leaseq_core::Stats) field, so a scrape agrees with
//! [`LeaseQueue::stats`](crate::LeaseQueue::stats) (and with the conservation law).
//!
//! | name | kind | labels | what (the `Stats` field) |
//! | --- | --- | --- | --- |
//! | `leaseq_pushed_total` | counter | `queue` | items accepted by push (`pushed`; not the items a durable store put back when it was opened) |
//! | `leaseq_rejected_total` | counter | `queue` | pushes refused and returned to the caller (`rejected`; an awaited push waiting for room in a full queue is not refused) |
//! | `leaseq_delivered_total` | counter | `queue` | deliveries, first ones and repeats (`delivered`) |
//! | `leaseq_redelivered_total` | counter | `queue` | deliveries after the first (`redelivered`) |
//! | `leaseq_acked_total` | counter | `queue` | items acked (`acked`) |
//! | `leaseq_nacked_total` | counter | `queue` | attempts handed back early: nack, release, timeout, drop (`nacks`) |
//! | `leaseq_lease_expired_total` | counter | `queue` | leases that ran out before an ack (`lease_expired`) |
//! | `leaseq_dead_lettered_total` | counter | `queue`, `reason` | items sent to the dead letters by this queue value (not the ones a durable store put back when it was opened), by [`Reason`](leaseq_core::Reason): `lease_expired`, `nacked`, `timed_out`, `dropped`, `released`, `rejected`, `panicked`, `expired`, `undecodable` (they add up to `dead_lettered`; `expired` is `expired`) |
//! | `leaseq_late_acks_total` | counter | `queue`, `outcome` | acks after the lease ended: `unclaimed` (accepted, `late_acks_unclaimed`) or `stale` (refused, `late_acks_stale`) |
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
//! | `leaseq_paused` | gauge | `queue` | 1 while the queue is paused, else 0 (`paused`; see [`LeaseQueue::pause`](crate::LeaseQueue::pause)) |
//! | `leaseq_oldest_ready_age_seconds` | gauge | `queue` | how long the oldest ready item has waited since it became ready (pushed, its delay or backoff over, its lease run out, put back, redriven), paused or not; 0 when none is ready (the core's `Queue::oldest_ready_since`) |
//!
//! The gauges give the depth by state (`leaseq_ready`, `leaseq_delayed`, `leaseq_in_flight`,
//! `leaseq_dead`), whether the queue is paused, and the age an alert on a stuck queue
//! watches: a growing `leaseq_oldest_ready_age_seconds` with `leaseq_paused` at 0 means
//! nobody takes the queue's items.
//!
//! # Pool metrics
//!
//! | name | kind | labels | what |
//! | --- | --- | --- | --- |
//! | `leaseq_pool_handled_total` | counter | `queue`, `kind`, `outcome` | handlings, by job kind (the pool's [`item_type`](crate::PoolBuilder::item_type); a router's job kinds) and outcome: `ok`, `failed` (retryable error), `permanent` (permanent error), `timed_out`, `panicked`; they add up to the [`PoolStats`](crate::PoolStats) outcome counts |
//! | `leaseq_pool_handling_seconds` | histogram | `queue`, `kind` | how long each handling took, from the lease to the handler's end, whatever the outcome (a timed-out run counts its limit) |
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
//! queue publishes nothing; one with items ready publishes every [`PUBLISH_EVERY`] all the
//! same, so that the oldest ready item's age moves while nothing else does). A [`LeaseQueue::stats`](crate::LeaseQueue::stats) or
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
/// `leaseq_rejected_total`: pushes refused and returned to the caller (an awaited push that
/// waits for room is not refused).
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
/// `leaseq_late_acks_total{outcome}`: acks after the lease ended, `unclaimed` (accepted)
/// or `stale` (refused).
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
/// `leaseq_paused`: 1 while the queue is paused, else 0.
pub const PAUSED: &str = "leaseq_paused";
/// `leaseq_oldest_ready_age_seconds`: how long the oldest ready item has waited since it
/// became ready (0 when none is ready).
pub const OLDEST_READY_AGE_SECONDS: &str = "leaseq_oldest_ready_age_seconds";
/// `leaseq_pool_handled_total{kind,outcome}`: pool handlings by job kind and outcome.
pub const POOL_HANDLED: &str = "leaseq_pool_handled_total";
/// `leaseq_pool_handling_seconds{kind}`: how long each pool handling took, by job kind.
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
        Reason::Rejected => "rejected",
        Reason::Panicked => "panicked",
        Reason::Expired => "expired",
        Reason::Undecodable => "undecodable",
        _ => "other",
    }
}

#[cfg(feature = "metrics")]
mod pool;
#[cfg(feature = "metrics")]
mod queue;

#[cfg(feature = "metrics")]
pub(crate) use pool::PoolMetrics;
#[cfg(feature = "metrics")]
pub(crate) use queue::{PublishState, QueueMetrics, Snapshot};

#[cfg(feature = "metrics")]
use ::metrics::{describe_counter, describe_gauge, describe_histogram, Unit};

#[cfg(feature = "metrics")]
/// Gives the installed recorder a unit and a description for every name leaseq reports
/// (what Prometheus shows as `HELP`). Optional; call it once, after installing the
/// recorder.
pub fn describe() {
    let counters: [(&'static str, &'static str); 18] = [
        (PUSHED, "Items accepted by push."),
        (REJECTED, "Pushes refused and returned to the caller."),
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
    let gauges: [(&'static str, &'static str); 5] = [
        (READY, "Items waiting for a receive."),
        (DELAYED, "Items waiting out a delay or backoff."),
        (IN_FLIGHT, "Items on lease."),
        (DEAD, "Dead letters kept."),
        (
            PAUSED,
            "1 while the queue is paused (no lease handed out), else 0.",
        ),
    ];
    for (name, help) in gauges {
        describe_gauge!(name, Unit::Count, help);
    }
    describe_gauge!(
        OLDEST_READY_AGE_SECONDS,
        Unit::Seconds,
        "How long the oldest ready item has waited since it became ready (0: none ready)."
    );
    describe_histogram!(
        POOL_HANDLING_SECONDS,
        Unit::Seconds,
        "How long each pool handling took, by item type."
    );
}
