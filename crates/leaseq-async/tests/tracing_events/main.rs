//! Every core event reaches `tracing` through the queue's driver, and every pool delivery
//! runs inside a `leaseq.delivery` span (feature `tracing`; virtual time).
//!
//! Run with `cargo test -p leaseq-async --features tracing`.
#![cfg(feature = "tracing")]

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::Push;
use leaseq_async::{Config, Extended, LeaseQueue, Pool, Runtime, SimRuntime};
use leaseq_test_kit::sim;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One event or span as the collector saw it.
#[derive(Clone, Debug)]
struct Seen {
    /// The event's message, or the span's name.
    name: String,
    level: Level,
    fields: BTreeMap<String, String>,
    /// The span entered when the event happened (events only).
    parent: Option<u64>,
    /// The span's id (spans only).
    id: Option<u64>,
}

#[derive(Default)]
struct Log {
    events: Vec<Seen>,
    spans: Vec<Seen>,
    /// Spans entered, innermost last (the simulation runs on one thread).
    entered: Vec<u64>,
}

/// A tiny subscriber that records every event and span, with their fields.
#[derive(Clone, Default)]
struct Collector {
    log: Arc<Mutex<Log>>,
    next_id: Arc<AtomicU64>,
}

mod collector;
mod events;
mod spans;

use collector::*;
