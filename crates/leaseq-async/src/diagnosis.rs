//! Plain-words verdicts on a queue's settings, from its stats.

use std::fmt;
use std::time::Duration;

use leaseq_core::Stats;

use crate::pool_stats::PoolStats;

/// What a finding is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum FindingKind {
    /// Leases run out while handlers still work: redeliveries and late acks are frequent,
    /// dead letters rare.
    VisibilityTooShort,
    /// Items pass their own deadline before anyone works them.
    ItemsExpireUnworked,
    /// Many handlings hit the item timeout.
    ItemTimeoutTooShort,
    /// Items use up their attempts and pile up in the dead letters.
    ManyDeadLetters,
    /// Workers stop making progress.
    StuckWorkers,
    /// Blocking handlers keep running after their item timed out.
    BlockingOverruns,
    /// A handler hung while its heartbeat kept extending the lease: the item is held until
    /// the max lease lifetime, not its visibility.
    HungUnderHeartbeat,
    /// The store could not make settles durable (disk full, file locked, connection lost):
    /// those items come back unless the settle landed after all, so they may run again.
    StoreFailures,
    /// The queue is paused ([`LeaseQueue::pause`](crate::LeaseQueue::pause)): nothing is
    /// handed out until it is resumed.
    Paused,
}

/// One verdict, with the figures behind it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Finding {
    /// What it is about.
    pub kind: FindingKind,
    /// The verdict in plain words, figures included.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// `part` as a percentage of `whole`; 0 when `whole` is 0.
fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Whether `part` is more than 1 % of `whole` ("frequent"); any `part` at all of a `whole`
/// of 0. Exact on whole numbers, for any values.
fn frequent(part: u64, whole: u64) -> bool {
    u128::from(part) * 100 > u128::from(whole)
}

/// `part` out of `whole` in words: `"142 of the 1000 deliveries (14.2%)"`.
/// When `part` counts more than `whole` (a shared store's counters may span other
/// processes' work, as leases this process took back from them), no share is made up:
/// `"60 (more than the 0 deliveries counted here)"`.
fn of(part: u64, whole: u64, what: &str) -> String {
    if part > whole {
        format!("{part} (more than the {whole} {what} counted here)")
    } else {
        format!("{part} of the {whole} {what} ({:.1}%)", pct(part, whole))
    }
}

/// What [`left`] counts, in words.
const LEFT: &str = "items acked, dead-lettered or cancelled here";

/// Items this process saw leave the queue: acked, dead-lettered or cancelled here (an
/// expiry counts as a dead letter; a redriven item that leaves again counts again).
fn left(queue: &Stats) -> u64 {
    queue
        .acked
        .saturating_add(queue.dead_lettered.max(queue.expired))
        .saturating_add(queue.cancelled)
}

/// Reads the stats of a queue (and of its pool, if any) and says, in plain words, which
/// settings look wrong. An empty list means nothing stood out. Thresholds: a rate above 1 %
/// is "frequent": of this process's deliveries (leases running out, late acks), of its
/// handlings (item timeouts), or of the items it saw leave the queue (acked, dead-lettered or
/// cancelled here: expiries, dead letters).
///
/// **Whose figures.** A queue's [`Stats`] counters are what this process did: for the
/// in-memory store that is the whole queue, for a store that several processes share (the
/// Postgres store) only this process's operations. The gauges (ready, delayed, in flight,
/// dead) are the queue's, as the store last read them. So every rate here divides a count of
/// this process by another count of this process, never by `pushed` (a worker-only process
/// pushed nothing); each message says so ("in this process"). No input panics or divides
/// by zero.
///
/// ```
/// use leaseq_async::{diagnose, FindingKind};
/// use leaseq_core::Stats;
/// use std::time::Duration;
///
/// let mut stats = Stats::default();
/// stats.pushed = 500;
/// stats.delivered = 560;
/// stats.redelivered = 60;
/// stats.lease_expired = 60;
/// stats.late_acks_stale = 54;
/// stats.acked = 490;
/// let findings = diagnose(&stats, None, Duration::from_millis(500));
/// assert_eq!(findings[0].kind, FindingKind::VisibilityTooShort);
/// println!("{}", findings[0]);
/// ```
pub fn diagnose(queue: &Stats, pool: Option<&PoolStats>, visibility: Duration) -> Vec<Finding> {
    let mut out = Vec::new();
    if queue.paused {
        out.push(Finding {
            kind: FindingKind::Paused,
            message: format!(
                "the queue is paused: no lease is handed out, and {} ready and {} delayed \
                 items wait (as the store last counted them); resume it to go on.",
                queue.ready, queue.delayed
            ),
        });
    }
    let late = queue
        .late_acks_stale
        .saturating_add(queue.late_acks_unclaimed);
    let dead_not_expired = queue.dead_lettered.saturating_sub(queue.expired);
    let left = left(queue);
    if (frequent(late, queue.delivered) || frequent(queue.lease_expired, queue.delivered))
        && dead_not_expired.saturating_mul(4) <= queue.lease_expired.max(late)
    {
        let slowest = pool
            .and_then(|p| p.types.iter().filter_map(|(_, r)| r.p99).max())
            .map(|p99| format!("; the slowest type's p99 is {p99:?}"))
            .unwrap_or_default();
        out.push(Finding {
            kind: FindingKind::VisibilityTooShort,
            message: format!(
                "visibility ({visibility:?}) is shorter than real processing time: in this \
                 process, {} outlived their lease and {} acks came late ({} refused as stale), \
                 but only {} items were dead-lettered{slowest}. Raise the visibility or turn \
                 the heartbeat on.",
                of(queue.lease_expired, queue.delivered, "deliveries"),
                late,
                queue.late_acks_stale,
                dead_not_expired,
            ),
        });
    }
    if frequent(queue.expired, left) {
        out.push(Finding {
            kind: FindingKind::ItemsExpireUnworked,
            message: format!(
                "items expire before they are worked: in this process, {} passed their own \
                 deadline; add workers, shorten item timeouts, or give items longer to live.",
                of(queue.expired, left, LEFT),
            ),
        });
    }
    if let Some(p) = pool {
        if frequent(p.timed_out, p.handled()) {
            let advice: Vec<String> = p
                .types
                .iter()
                .filter(|(_, r)| r.timed_out > 0)
                .map(|(name, r)| {
                    format!(
                        "{name}: {:.1}% timed out, p99 of finished runs {:?}, suggested timeout {:?}",
                        r.timeout_rate() * 100.0,
                        r.p99.unwrap_or_default(),
                        r.suggested_timeout.unwrap_or_default(),
                    )
                })
                .collect();
            out.push(Finding {
                kind: FindingKind::ItemTimeoutTooShort,
                message: format!(
                    "{} hit the item timeout{}. If those items are not truly hung, raise \
                     the timeout to the suggestion.",
                    of(p.timed_out, p.handled(), "handlings of this pool"),
                    if advice.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", advice.join("; "))
                    },
                ),
            });
        }
        if p.stuck_reports > 0 && p.heartbeat {
            out.push(Finding {
                kind: FindingKind::HungUnderHeartbeat,
                message: format!(
                    "the watchdog reported {} workers stuck on one item while the heartbeat kept \
                     its lease alive (this process made {} extends, {} capped at the max lease \
                     lifetime): a hung handler holds its item until that cap, not for one \
                     visibility. Set an item timeout so the item comes back at once.",
                    p.stuck_reports, queue.extends, queue.extends_capped
                ),
            });
        }
        if p.stuck_reports > 0 {
            out.push(Finding {
                kind: FindingKind::StuckWorkers,
                message: format!(
                    "the watchdog reported {} stuck workers: a handler blocks its thread or \
                     runs without an item timeout.",
                    p.stuck_reports
                ),
            });
        }
        if p.blocking_overruns > 0 {
            out.push(Finding {
                kind: FindingKind::BlockingOverruns,
                message: format!(
                    "{} blocking handlers ran past their item timeout ({} still running): \
                     their threads cannot be stopped, so make the work itself time-bounded.",
                    p.blocking_overruns, p.blocking_overruns_running
                ),
            });
        }
        if p.failed_settles > 0 {
            out.push(Finding {
                kind: FindingKind::StoreFailures,
                message: format!(
                    "the store could not make the settle (ack, nack or dead letter) of {} \
                     durable: disk full, file locked or connection lost. Each such item comes \
                     back unless its settle landed after all, so it may run again; look at the \
                     store's errors.",
                    of(p.failed_settles, p.handled(), "handlings of this pool"),
                ),
            });
        }
    }
    if frequent(dead_not_expired, left) {
        out.push(Finding {
            kind: FindingKind::ManyDeadLetters,
            message: format!(
                "in this process, {} were dead-lettered after using up their attempts or being \
                 declared poison; the queue keeps {} dead letters (as the store last counted \
                 them). Inspect their last errors.",
                of(dead_not_expired, left, LEFT),
                queue.dead,
            ),
        });
    }
    out
}
