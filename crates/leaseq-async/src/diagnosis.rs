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

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Reads the stats of a queue (and of its pool, if any) and says, in plain words, which
/// settings look wrong. An empty list means nothing stood out. Thresholds: a rate above 1 %
/// of deliveries (or of pushes, for expiries) is "frequent".
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
    let delivered = queue.delivered.max(1);
    let late = queue.late_acks_stale + queue.late_acks_unclaimed;
    let dead_not_expired = queue.dead_lettered - queue.expired;
    if (pct(late, delivered) > 1.0 || pct(queue.lease_expired, delivered) > 1.0)
        && dead_not_expired * 4 <= queue.lease_expired.max(late)
    {
        let slowest = pool
            .and_then(|p| p.types.iter().filter_map(|(_, r)| r.p99).max())
            .map(|p99| format!("; the slowest type's p99 is {p99:?}"))
            .unwrap_or_default();
        out.push(Finding {
            kind: FindingKind::VisibilityTooShort,
            message: format!(
                "visibility ({visibility:?}) is shorter than real processing time: {} of {} \
                 deliveries ({:.1}%) outlived their lease and {} acks came late ({} refused as \
                 stale), but only {} items were dead-lettered{slowest}. Raise the visibility \
                 or turn the heartbeat on.",
                queue.lease_expired,
                queue.delivered,
                pct(queue.lease_expired, delivered),
                late,
                queue.late_acks_stale,
                dead_not_expired,
            ),
        });
    }
    if pct(queue.expired, queue.pushed.max(1)) > 1.0 {
        out.push(Finding {
            kind: FindingKind::ItemsExpireUnworked,
            message: format!(
                "items expire before they are worked: {} of {} pushed ({:.1}%) passed their \
                 deadline; add workers, shorten item timeouts, or give items longer to live.",
                queue.expired,
                queue.pushed,
                pct(queue.expired, queue.pushed.max(1)),
            ),
        });
    }
    if let Some(p) = pool {
        let handled = p.handled().max(1);
        if pct(p.timed_out, handled) > 1.0 {
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
                    "{} of {} handlings ({:.1}%) hit the item timeout ({}). If those items are \
                     not truly hung, raise the timeout to the suggestion.",
                    p.timed_out,
                    p.handled(),
                    pct(p.timed_out, handled),
                    advice.join("; "),
                ),
            });
        }
        if p.stuck_reports > 0 && p.heartbeat {
            out.push(Finding {
                kind: FindingKind::HungUnderHeartbeat,
                message: format!(
                    "the watchdog reported {} workers stuck on one item while the heartbeat kept \
                     its lease alive ({} extends, {} capped at the max lease lifetime): a hung \
                     handler holds its item until that cap, not for one visibility. Set an item \
                     timeout so the item comes back at once.",
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
    }
    if pct(dead_not_expired, queue.pushed.max(1)) > 1.0 {
        out.push(Finding {
            kind: FindingKind::ManyDeadLetters,
            message: format!(
                "{} of {} pushed items ({:.1}%) were dead-lettered after using up their \
                 attempts or being declared poison; inspect their last errors.",
                dead_not_expired,
                queue.pushed,
                pct(dead_not_expired, queue.pushed.max(1)),
            ),
        });
    }
    out
}
