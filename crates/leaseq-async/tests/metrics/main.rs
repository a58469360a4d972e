//! The metrics a queue and its pool report agree with their stats (feature `metrics`;
//! virtual time, a debugging recorder installed for the test only).
//!
//! Run with `cargo test -p leaseq-async --features metrics`.
#![cfg(feature = "metrics")]

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::metrics::{self as names, reason_label, PUBLISH_EVERY};
use leaseq_async::{
    Config, ItemTimeout, JobError, LeaseQueue, Pool, PoolStats, Push, Reason, Runtime, SimRuntime,
    Stats,
};
use leaseq_test_kit::sim::{self, sleep};
use leaseq_test_kit::steps;
use metrics::Unit;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::MetricKind;

/// A metric's name and labels, sorted.
type Key = (String, Vec<(String, String)>);

/// Every value the recorder was given, added up across scrapes (its snapshots reset
/// counters and gauges, and leaseq moves gauges by their changes, so sums are exact).
#[derive(Default)]
struct Scraped {
    counters: BTreeMap<Key, u64>,
    gauges: BTreeMap<Key, f64>,
    histograms: BTreeMap<Key, Vec<f64>>,
}

struct Recorder {
    recorder: DebuggingRecorder,
    snapshotter: Snapshotter,
    scraped: Arc<Mutex<Scraped>>,
}

#[derive(Clone)]
struct Scraper {
    snapshotter: Snapshotter,
    scraped: Arc<Mutex<Scraped>>,
}

mod pool;
mod queue;
mod scraper;

use scraper::*;
