//! `leaseq-async`: leaseq's async layer, written once for every runtime.
//!
//! This crate turns the [`leaseq_core`] state machine into an async work queue with broker
//! delivery guarantees: [`LeaseQueue`] (push, receive, close), [`Delivery`] (ack, nack,
//! extend, dead-letter; dropped, it goes back), heartbeats that keep slow work's leases alive,
//! and a worker [`Pool`] that puts a timeout around each item, catches panics, runs blocking
//! handlers, and has a [`Watchdog`] for workers that stop making progress.
//!
//! It knows runtimes only through the small [`Runtime`] trait (clock, timer, spawn, abort,
//! blocking). Use it through an adapter crate: `leaseq-tokio` or `leaseq-smol`, which
//! implement [`Runtime`] and re-export everything here. [`SimRuntime`] (feature `sim`)
//! implements it on virtual time, for tests and simulations.
//!
//! # How the pieces fit
//!
//! - One lock per queue guards the core; no lock is held across an await, and of the
//!   caller's code only the item's `Clone` runs under it, for a receive's copy (a
//!   dead-letter read copies after the lock), and with a record of finished jobs by kind a
//!   new dead letter's `ItemKind`: an item whose `Clone` uses its own queue
//!   deadlocks a receive (RELIABILITY.md's known limits say why it stays). Batch receive
//!   and batch ack take many items per lock acquisition and read the clock once.
//! - One **driver** task per queue, with one timer reset (not rebuilt) to the store's next
//!   alarm, applies what is due: leases and delays running out, and heartbeats (every
//!   registered lease due, extended in one lock acquisition: 10,000 held deliveries cost one
//!   task and one timer). There is no polling loop.
//! - Every store sits behind one seam, [`Store`]; `Ok` from a durable store means on disk
//!   (or committed on the server), and a failure is typed ([`SettleError`], [`StoreError`]:
//!   not done, or outcome unknown).
//! - `receive()` is cancel-safe: an item leaves the queue only in the poll that returns it.
//! - A [`Delivery`] dropped unsettled goes back at once (reason "dropped"; the attempt
//!   counts).
//! - Periodic jobs: a [`Scheduler`] pushes a job per tick of a core
//!   [`Schedule`](leaseq_core::schedule::Schedule) (an interval, or a [`CronCalendar`]), each
//!   under its tick's unique key. The schedule's cursor lives in the queue's store
//!   ([`ScheduleState`]), moved by compare-and-set in the commit that pushes the ticks
//!   ([`Store::commit_schedule`]): any number of processes sharing the queue push each tick
//!   once, a restart resumes from the cursor, and ticks missed while every process was
//!   down are caught up as the schedule's `CatchUp` says ([`LeaseQueue::schedules`] shows
//!   them).
//!
//! # Features
//!
//! None is on by default, so a tokio user compiles no executor of ours.
//!
//! - `sim`: [`SimRuntime`] (with [`SimTask`] and [`SimTimer`]), a single-threaded runtime on
//!   virtual time that jumps to the next timer when idle. Implies `executor`. Meant for
//!   tests: `leaseq-async = { version = "0.1", features = ["sim"] }` in `[dev-dependencies]`.
//! - `cron`: [`CronCalendar`], cron expressions in an IANA time zone as the calendar of a
//!   [`Scheduler`] (`croner` and `chrono-tz` compute the ticks, daylight saving and leap
//!   days included).
//! - `router`: the [`router`] module, a typed job router: one queue of [`Envelope`]s (a job's
//!   kind and its JSON args), each kind ([`JobKind`]) with its own handler and
//!   [`KindPolicy`], dispatched by a pool ([`PoolBuilder::spawn_router`]); an unknown kind
//!   is dead-lettered at once. Implies `serde`; pulls in `serde_json`.
//! - `operator`: the `operator` module, the operator interface (`Operator`) the `leaseq`
//!   command line and the `leaseq-web` dashboard are written over, one trait each store
//!   implements. Implies `router`.
//! - `opentelemetry`: trace context through a router's queue (see the [`router`] module's
//!   "Trace context"): an envelope records the pushing span's W3C `traceparent`, and the
//!   handler's `leaseq.job` span is that span's child, across processes. Implies `router`
//!   and `tracing`; pulls in `opentelemetry` (the API) and `tracing-opentelemetry`.
//! - `executor`: [`ExecutorTask`], an `async-executor` task as a [`Runtime`] task (what
//!   `leaseq-smol` uses). Pulls in `async-executor`.
//! - `tracing`: every core event (redeliveries, lease expiries, late acks, dead letters,
//!   capped extensions) as a `tracing` event, emitted by the queue's driver with the queue's
//!   [name](QueueBuilder::name) in its `queue` field; a warning when events were dropped
//!   from a full event buffer; and a `leaseq.delivery` span (fields `queue`, `id`,
//!   `attempt`, `item_type`) around each pool handling, so a handler's own events carry
//!   its item (with `router`, a `leaseq.job` span inside it: `kind`, `id`, `attempt` and the
//!   envelope's `traceparent`); the watchdog's stuck workers at `warn`. Events asked for with
//!   [`QueueBuilder::events`] are left for you to poll instead.
//! - `metrics`: counters, gauges and handling-time histograms through the `metrics` facade,
//!   each labelled with the queue's name: the queue's [`Stats`] (`leaseq_pushed_total`,
//!   `leaseq_acked_total`, `leaseq_dead_lettered_total{reason}`,
//!   `leaseq_late_acks_total{outcome}`, gauges `leaseq_ready`, `leaseq_in_flight`,
//!   `leaseq_paused`, `leaseq_oldest_ready_age_seconds`, ...) and the pool's outcomes
//!   (`leaseq_pool_handled_total{kind,outcome}`, `leaseq_pool_handling_seconds{kind}`).
//!   Every name, and when they are updated, in
//!   [`metrics`] (that module's name constants are there without the feature too).
//! - `serde`: `Serialize` and `Deserialize` for the core's observable types ([`Stats`],
//!   [`DeadLetter`], [`Config`], [`Event`], [`MessageId`], [`TypeReport`], ...: see
//!   `leaseq-core`'s `serde` feature), [`Finding`], [`FindingKind`] and [`Watchdog`];
//!   `Serialize` only for [`PoolStats`], [`PoolReport`], [`StuckWorker`] and [`Holding`],
//!   whose item types are `&'static str`; and [`PostcardCodec`], a [`Codec`] for any `serde`
//!   item in postcard's compact binary format (for durable stores).
// Without `sim` (or `executor`) the items named above are not compiled: link them to docs.rs.
#![cfg_attr(
    not(feature = "sim"),
    doc = "",
    doc = "[`SimRuntime`]: https://docs.rs/leaseq-async/latest/leaseq_async/struct.SimRuntime.html",
    doc = "[`SimTask`]: https://docs.rs/leaseq-async/latest/leaseq_async/type.SimTask.html",
    doc = "[`SimTimer`]: https://docs.rs/leaseq-async/latest/leaseq_async/struct.SimTimer.html"
)]
#![cfg_attr(
    not(feature = "executor"),
    doc = "",
    doc = "[`ExecutorTask`]: https://docs.rs/leaseq-async/latest/leaseq_async/struct.ExecutorTask.html"
)]
#![cfg_attr(
    not(feature = "cron"),
    doc = "",
    doc = "[`CronCalendar`]: https://docs.rs/leaseq-async/latest/leaseq_async/struct.CronCalendar.html"
)]
#![cfg_attr(
    not(feature = "router"),
    doc = "",
    doc = "[`router`]: https://docs.rs/leaseq-async/latest/leaseq_async/router/index.html",
    doc = "[`Envelope`]: https://docs.rs/leaseq-async/latest/leaseq_async/router/struct.Envelope.html",
    doc = "[`JobKind`]: https://docs.rs/leaseq-async/latest/leaseq_async/router/trait.JobKind.html",
    doc = "[`PoolBuilder::spawn_router`]: https://docs.rs/leaseq-async/latest/leaseq_async/struct.PoolBuilder.html#method.spawn_router"
)]
#![cfg_attr(
    not(feature = "serde"),
    doc = "",
    doc = "[`PostcardCodec`]: https://docs.rs/leaseq-async/latest/leaseq_async/struct.PostcardCodec.html"
)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod ack_batch;
mod admin;
mod admin_error;
mod batch_error;
mod beats;
#[cfg(test)]
mod beats_model;
mod builder;
mod closing;
mod codec;
mod consumer;
mod dead_filter;
mod delivery;
pub mod dependencies;
mod diagnosis;
mod driver;
mod error;
mod error_chain;
#[cfg(feature = "executor")]
mod executor_task;
mod facade;
mod fetcher;
mod flow_control;
mod history;
mod job_error;
mod lease_lost;
mod memory;
mod memory_admin;
pub mod metrics;
mod open;
#[cfg(feature = "operator")]
pub mod operator;
mod page;
mod pool;
mod pool_stats;
pub mod progress;
mod push;
mod queue;
mod queue_flow;
mod receive;
#[cfg(feature = "router")]
pub mod router;
mod runtime;
mod schedule_store;
mod scheduler;
mod settling;
mod signal;
#[cfg(feature = "sim")]
mod sim;
mod stop;
mod store;
mod store_error;
mod stored;
mod taken;
#[cfg(feature = "tracing")]
mod trace;
mod watchdog;

pub use ack_batch::AckBatch;
pub use admin_error::AdminError;
pub use batch_error::BatchError;
pub use builder::{NoCodec, QueueBuilder};
pub use closing::Closing;
#[cfg(feature = "serde")]
pub use codec::PostcardCodec;
pub use codec::{BytesCodec, Codec, CodecError};
pub use consumer::Consumer;
pub use dead_filter::{DeadFilter, ItemKind};
pub use diagnosis::{diagnose, Finding, FindingKind};
pub use error::{NewQueueError, PushError};
pub use error_chain::ErrorChain;
#[cfg(feature = "executor")]
pub use executor_task::ExecutorTask;
pub use flow_control::{FlowControl, FlowSettings, FlowWaiting};
pub use history::{FinishOutcome, Finished, HistoryQuery};
pub use job_error::JobError;
pub use lease_lost::{LeaseLost, LeaseSignal};
pub use memory::{MemoryStore, MemoryTicket, MemoryWaiting, Withdrawn};
pub use open::{InMemory, OpenStore, QueueSettings, DEFAULT_MAX_LEASE};
pub use page::Page;
pub use pool::{ItemTimeout, Job, Pool, PoolBuilder, PoolReport, PoolWatch, Running};
pub use pool_stats::PoolStats;
pub use progress::{CheckpointError, LeaseKey, Progress, MAX_PROGRESS_BYTES};
pub use push::Push;
pub use queue::LeaseQueue;
pub use receive::{Receive, ReceiveError, ReceiveStream};
#[cfg(feature = "router")]
pub use router::{Envelope, EnvelopeCodec, JobKind, Router};
pub use runtime::{BoxFuture, Runtime};
pub use schedule_store::{ScheduleCommit, ScheduleCommitError, ScheduleCommitted, ScheduleState};
pub use scheduler::{system_clock, Scheduler, SchedulerError, SchedulerStep, WallClock};
#[cfg(feature = "cron")]
pub use scheduler::{CronCalendar, CronError};
pub use settling::Settling;
#[cfg(feature = "sim")]
pub use sim::{SimRuntime, SimTask, SimTimer};
pub use stop::Stopping;
pub use store::{Checkpointing, Delivery, Drive, Store, TakeHeartbeat, Taken};
pub use store_error::{SettleError, StoreError};
pub use stored::{relative_time, StoredCounts, StoredItem, StoredState};
pub use watchdog::{Holding, StuckWorker, Watchdog};

/// The core state machine, re-exported.
pub use leaseq_core as core;
pub use leaseq_core::{
    Acked, Backoff, CancelError, Config, ConfigError, ConservationError, DeadLetter, Event,
    EventMask, Extended, Failure, Histogram, ItemState, ItemView, Jitter, KindPolicy,
    LatencyAdvisor, MessageId, Nacked, Reason, Receipt, ReceiptError, RedriveError, Snoozed, Stats,
    Timestamp, TypeReport, UniqueKey, MAX_PRIORITY,
};
