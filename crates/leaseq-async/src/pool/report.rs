//! [`PoolReport`]: what a pool reports at the end.

use std::fmt;
use std::time::Duration;

use crate::diagnosis::Finding;
use crate::pool_stats::PoolStats;
use crate::watchdog::StuckWorker;

/// What [`Pool::shutdown`](crate::Pool::shutdown) reports. Its `Display` is a short summary
/// for people: outcomes, shutdown, the queue's stats, the diagnosis.
///
/// With the `serde` feature it serializes, but does not deserialize (the item types in its
/// [`PoolStats`] and stuck workers are `&'static str`).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct PoolReport {
    /// The final snapshot.
    pub stats: PoolStats,
    /// How long the shutdown took.
    pub took: Duration,
    /// Workers whose item was still running at the end of the grace period; each was cut
    /// off and its item put back to the queue uncounted (see [`put_back`](Self::put_back)).
    pub handed_back: usize,
    /// The items those workers held, when the pool's watchdog was on (it tracks what each
    /// worker holds); empty without one. [`put_back`](Self::put_back) lists them either way.
    pub handed_back_items: Vec<leaseq_core::MessageId>,
    /// The items of the handlers cut off at the end of the grace, put back to the queue
    /// ([`Store::put_back`](crate::Store::put_back)): their attempt not counted, their
    /// checkpoint kept, visible at once (to the next process, once a durable store has
    /// committed it: await the queue's close). Never counted as failures nor
    /// dead-lettered because of the stop.
    pub put_back: Vec<leaseq_core::MessageId>,
    /// Every stuck-worker report of the pool's life.
    pub stuck: Vec<StuckWorker>,
    /// Plain-words verdicts on the settings (see [`diagnose`](crate::diagnose)).
    pub diagnosis: Vec<Finding>,
}

/// A few lines for people: the outcomes, the shutdown, the queue's stats, the diagnosis.
///
/// ```text
/// handled 120: ok 100, failed 10, permanent 5, timed out 3, panicked 2
/// shutdown took 1.5s; handed back 2 (#5, #9); stuck workers reported 1
/// queue: pushed 120, acked 105, dead 13 (ready 0, delayed 0, in flight 0); redelivered 18, late acks 0 unclaimed / 0 stale
/// diagnosis:
/// - the watchdog reported 1 stuck workers: ...
/// ```
///
/// Stale settles, worker panics and blocking overruns join the first line when there are
/// any; with no finding the last line reads `diagnosis: nothing stood out`.
impl fmt::Display for PoolReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.stats;
        write!(
            f,
            "handled {}: ok {}, failed {}, permanent {}, timed out {}, panicked {}",
            s.handled(),
            s.ok,
            s.failed,
            s.permanent,
            s.timed_out,
            s.panicked
        )?;
        if s.stale_settles > 0 {
            write!(f, "; stale settles {}", s.stale_settles)?;
        }
        if s.failed_settles > 0 {
            write!(f, "; failed settles (store) {}", s.failed_settles)?;
        }
        if s.worker_panics > 0 {
            write!(f, "; worker panics {}", s.worker_panics)?;
        }
        if s.blocking_overruns > 0 {
            write!(
                f,
                "; blocking overruns {} ({} still running)",
                s.blocking_overruns, s.blocking_overruns_running
            )?;
        }
        write!(
            f,
            "\nshutdown took {:?}; handed back {}",
            self.took, self.handed_back
        )?;
        let items = if self.put_back.is_empty() {
            &self.handed_back_items
        } else {
            &self.put_back
        };
        if !items.is_empty() {
            let ids: Vec<String> = items.iter().map(|id| id.to_string()).collect();
            write!(f, " ({})", ids.join(", "))?;
        }
        write!(f, "; stuck workers reported {}", self.stuck.len())?;
        write!(f, "\nqueue: {}", s.queue)?;
        if self.diagnosis.is_empty() {
            return f.write_str("\ndiagnosis: nothing stood out");
        }
        f.write_str("\ndiagnosis:")?;
        for finding in &self.diagnosis {
            write!(f, "\n- {finding}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use leaseq_core::{MessageId, Stats};

    use super::PoolReport;
    use crate::diagnosis::{Finding, FindingKind};
    use crate::pool_stats::PoolStats;

    fn report() -> PoolReport {
        let mut queue = Stats::default();
        queue.pushed = 120;
        queue.acked = 105;
        queue.dead = 13;
        queue.in_flight = 2;
        queue.redelivered = 18;
        let mut stats = PoolStats::default();
        (stats.ok, stats.failed, stats.permanent) = (100, 10, 5);
        (stats.timed_out, stats.panicked) = (3, 2);
        stats.queue = queue;
        PoolReport {
            stats,
            took: Duration::from_millis(1500),
            handed_back: 2,
            handed_back_items: Vec::new(),
            put_back: vec![MessageId::new(5), MessageId::new(9)],
            stuck: Vec::new(),
            diagnosis: Vec::new(),
        }
    }

    #[test]
    fn display_summarizes_the_report() {
        let mut r = report();
        assert_eq!(
            r.to_string(),
            "handled 120: ok 100, failed 10, permanent 5, timed out 3, panicked 2\n\
             shutdown took 1.5s; handed back 2 (#5, #9); stuck workers reported 0\n\
             queue: pushed 120, acked 105, dead 13 (ready 0, delayed 0, in flight 2); \
             redelivered 18, late acks 0 unclaimed / 0 stale\n\
             diagnosis: nothing stood out"
        );
        r.stats.stale_settles = 4;
        r.stats.worker_panics = 1;
        r.stats.blocking_overruns = 2;
        r.stats.blocking_overruns_running = 1;
        r.put_back.clear();
        r.diagnosis = vec![
            Finding {
                kind: FindingKind::StuckWorkers,
                message: "workers got stuck".to_string(),
            },
            Finding {
                kind: FindingKind::ManyDeadLetters,
                message: "many dead letters".to_string(),
            },
        ];
        let text = r.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "handled 120: ok 100, failed 10, permanent 5, timed out 3, panicked 2; \
             stale settles 4; worker panics 1; blocking overruns 2 (1 still running)"
        );
        assert_eq!(
            lines[1],
            "shutdown took 1.5s; handed back 2; stuck workers reported 0"
        );
        assert_eq!(
            &lines[3..],
            ["diagnosis:", "- workers got stuck", "- many dead letters"]
        );
    }
}
