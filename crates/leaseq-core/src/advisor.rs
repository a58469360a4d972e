//! Per-type handling times and the item timeouts they suggest.

use alloc::vec::Vec;
use core::time::Duration;

use crate::error::ConfigError;
use crate::histogram::Histogram;

/// How one handling of an item ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Outcome {
    /// Finished and acked.
    Ok,
    /// The handler returned an error.
    Failed,
    /// The item timeout fired.
    TimedOut,
    /// The handler panicked.
    Panicked,
}

#[derive(Clone, Debug, Default)]
struct TypeStats {
    latency: Histogram,
    ok: u64,
    failed: u64,
    timed_out: u64,
    panicked: u64,
}

/// What the advisor knows about one item type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct TypeReport {
    /// Handlings recorded, of every outcome.
    pub handled: u64,
    /// Finished handlings.
    pub ok: u64,
    /// Handler errors.
    pub failed: u64,
    /// Item timeouts.
    pub timed_out: u64,
    /// Panics.
    pub panicked: u64,
    /// Median handling time of the runs that finished.
    pub p50: Option<Duration>,
    /// 99th percentile.
    pub p99: Option<Duration>,
    /// 99.9th percentile.
    pub p999: Option<Duration>,
    /// Timed-out share of all handlings, in parts per million.
    pub timeout_ppm: u32,
    /// `max(floor, multiplier × p99)`; `None` before any run finished.
    pub suggested_timeout: Option<Duration>,
}

impl TypeReport {
    /// Timed-out share of all handlings, from 0 to 1.
    pub fn timeout_rate(&self) -> f64 {
        self.timeout_ppm as f64 / 1e6
    }
}

/// Handling times per item type, in bounded histograms, and the item timeouts they suggest:
/// `max(floor, multiplier × p99)`, by default `max(100 ms, 3 × p99)`.
///
/// Only runs that finished (ok, failed or panicked) feed the latency histograms: a timed-out
/// run says only that the item took at least the timeout, and feeding it back would make the
/// suggestion chase its own tail. Time-outs are counted in the timeout rate instead.
///
/// ```
/// use core::time::Duration;
/// use leaseq_core::{LatencyAdvisor, Outcome};
///
/// let mut advisor = LatencyAdvisor::new();
/// for _ in 0..99 {
///     advisor.record("resize", Duration::from_millis(40), Outcome::Ok);
/// }
/// advisor.record("resize", Duration::from_millis(500), Outcome::TimedOut);
/// let report = advisor.report(&"resize").unwrap();
/// assert_eq!(report.timeout_ppm, 10_000);
/// let suggested = advisor.suggested_timeout(&"resize").unwrap();
/// assert!(suggested >= Duration::from_millis(120) && suggested <= Duration::from_millis(130));
/// ```
#[derive(Clone, Debug)]
pub struct LatencyAdvisor<K> {
    /// Per type, in key order: a sorted vector, as a pool has a few types and records one
    /// per handling (a binary search of a few keys costs less than a tree's entry API).
    types: Vec<(K, TypeStats)>,
    floor: Duration,
    multiplier: f64,
}

impl<K: Ord> Default for LatencyAdvisor<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Ord> LatencyAdvisor<K> {
    /// Suggests `max(100 ms, 3 × p99)`.
    pub const fn new() -> Self {
        LatencyAdvisor {
            types: Vec::new(),
            floor: Duration::from_millis(100),
            multiplier: 3.0,
        }
    }

    /// Suggests `max(floor, multiplier × p99)`. The multiplier must be a finite number of at
    /// least 1.
    pub fn with_rule(floor: Duration, multiplier: f64) -> Result<Self, ConfigError> {
        if !(multiplier.is_finite() && multiplier >= 1.0) {
            return Err(ConfigError::InvalidMultiplier);
        }
        Ok(LatencyAdvisor {
            types: Vec::new(),
            floor,
            multiplier,
        })
    }

    /// Records one handling of an item of type `key`: its outcome always, its time only if
    /// it ended by itself (ok or failed; not timed out or panicked).
    pub fn record(&mut self, key: K, took: Duration, outcome: Outcome) {
        let t = self.entry(key);
        match outcome {
            Outcome::Ok => t.ok += 1,
            Outcome::Failed => t.failed += 1,
            Outcome::TimedOut => t.timed_out += 1,
            Outcome::Panicked => t.panicked += 1,
        }
        // Only runs that ended by themselves measure the work: a timed-out run was cut at
        // the limit, and a panicked one includes the panic hook's time (a backtrace capture
        // can take longer than the work), which would inflate the suggested timeout.
        if matches!(outcome, Outcome::Ok | Outcome::Failed) {
            t.latency.record(took);
        }
    }

    /// The suggested item timeout for `key`, once a run of it has finished.
    pub fn suggested_timeout(&self, key: &K) -> Option<Duration> {
        let p99 = self.get(key)?.latency.quantile(0.99)?;
        Some(self.suggest(p99))
    }

    fn suggest(&self, p99: Duration) -> Duration {
        let scaled = Duration::try_from_secs_f64(p99.as_secs_f64() * self.multiplier)
            .unwrap_or(Duration::MAX);
        scaled.max(self.floor)
    }

    /// The latency histogram of `key`'s finished runs.
    pub fn histogram(&self, key: &K) -> Option<&Histogram> {
        self.get(key).map(|t| &t.latency)
    }

    /// What is known about `key`.
    pub fn report(&self, key: &K) -> Option<TypeReport> {
        let t = self.get(key)?;
        let handled = t.ok + t.failed + t.timed_out + t.panicked;
        let p99 = t.latency.quantile(0.99);
        Some(TypeReport {
            handled,
            ok: t.ok,
            failed: t.failed,
            timed_out: t.timed_out,
            panicked: t.panicked,
            p50: t.latency.quantile(0.5),
            p99,
            p999: t.latency.quantile(0.999),
            timeout_ppm: if handled == 0 {
                0
            } else {
                (t.timed_out as u128 * 1_000_000 / handled as u128) as u32
            },
            suggested_timeout: p99.map(|p| self.suggest(p)),
        })
    }

    /// Every type with its report, in key order.
    pub fn reports(&self) -> impl Iterator<Item = (&K, TypeReport)> + '_ {
        self.types
            .iter()
            .filter_map(move |(k, _)| self.report(k).map(|r| (k, r)))
    }

    /// Folds `other`'s records into this advisor.
    pub fn merge(&mut self, other: &LatencyAdvisor<K>)
    where
        K: Clone,
    {
        for (k, o) in &other.types {
            let t = self.entry(k.clone());
            t.latency.merge(&o.latency);
            t.ok += o.ok;
            t.failed += o.failed;
            t.timed_out += o.timed_out;
            t.panicked += o.panicked;
        }
    }

    /// The stats of `key`, if recorded.
    fn get(&self, key: &K) -> Option<&TypeStats> {
        let i = self.types.binary_search_by(|(k, _)| k.cmp(key)).ok()?;
        Some(&self.types[i].1)
    }

    /// The stats of `key`, empty ones inserted in order if there were none.
    #[inline]
    fn entry(&mut self, key: K) -> &mut TypeStats {
        let i = match self.types.binary_search_by(|(k, _)| k.cmp(&key)) {
            Ok(i) => i,
            Err(i) => self.insert_type(i, key),
        };
        &mut self.types[i].1
    }

    /// Inserts `key`'s empty stats at `i`, its place in key order: once per type, out of
    /// line so that the lookup of a known type inlines into its caller.
    #[cold]
    #[inline(never)]
    fn insert_type(&mut self, i: usize, key: K) -> usize {
        self.types.insert(i, (key, TypeStats::default()));
        i
    }
}
