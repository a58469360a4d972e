//! leaseq on [tokio]: in-process work queues with the delivery guarantees of a message
//! broker.
//!
//! A received item is *leased*, not taken: it stays in the queue, invisible for a visibility
//! timeout, and comes back unless the worker acks it with its receipt. Attempts are counted,
//! failures back off, and an item that keeps failing goes to the dead letters with its
//! attempt count, reason and last error.
//!
//! This crate is the tokio adapter: [`TokioRuntime`] implements leaseq's small
//! [`Runtime`] trait (clock, timers, spawn, abort, blocking), and the
//! aliases below fix it as the runtime. Everything else comes from `leaseq-async` and
//! `leaseq-core`, re-exported here.
//!
//! # Clocks and paused-time tests
//!
//! By default [`TokioRuntime`] reads the CPU's time-stamp counter (about 10 ns a read,
//! against 25 ns or more for `Instant::now()`), which does not follow tokio's paused clock.
//! A runtime whose clock is paused when the [`TokioRuntime`] is made
//! (`#[tokio::test(start_paused = true)]`) is seen and gets tokio's clock anyway. For clocks
//! paused later (`tokio::time::pause()` inside a test), turn on this crate's `test-util`
//! feature, which makes tokio's own clock the default (and enables `tokio/test-util`); it
//! belongs in `[dev-dependencies]`:
//!
//! ```toml
//! [dev-dependencies]
//! leaseq-tokio = { version = "0.1", features = ["test-util"] }
//! ```
//!
//! [`TokioRuntime::with_clock`] picks a [`TokioClock`] explicitly, whatever the features, and
//! [`TokioRuntime::with_precise_timer`] turns the sub-millisecond timer thread off.
//!
//! [`shutdown_signal`] is the process's SIGTERM or SIGINT (Ctrl-C elsewhere), the normal way
//! to stop a service's [`Pool`]: `pool.shutdown_on(shutdown_signal(), grace)`, where a
//! deploy costs no item an attempt (see [`Pool::shutdown`](leaseq_async::Pool::shutdown)).
//! [`PoolExt::shutdown_on_cancel`] shuts a [`Pool`] down when a tokio-util
//! `CancellationToken` is cancelled.
//!
//! ```
//! use std::time::Duration;
//! use leaseq_tokio::{Config, LeaseQueue};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let queue: LeaseQueue<String> = LeaseQueue::new(Config::new(Duration::from_secs(30))).unwrap();
//! queue.push("resize photo 17".to_string()).await.unwrap();
//!
//! let delivery = queue.receive().await.unwrap();
//! assert_eq!(delivery.item(), "resize photo 17");
//! assert_eq!(delivery.attempt(), 1);
//! delivery.ack().await.unwrap();
//! assert_eq!(queue.stats().acked, 1);
//! # }
//! ```
//!
//! # A job service: this crate and a store
//!
//! A service needs this crate and, for a durable queue, one store crate (`leaseq-sqlite`,
//! `leaseq-postgres`): everything else it uses is re-exported here. The queue and the
//! [`Pool`], with its [`Job`], [`JobError`], [`KindPolicy`] and [`Stopping`]; periodic
//! jobs ([`Scheduler`], [`SchedulerError`], [`Schedule`], [`Interval`], [`CatchUp`],
//! [`ScheduleState`]; `CronCalendar` with the feature `cron`); the job router (`Router`,
//! `JobKind`, `Envelope`, and `EnvelopeCodec`, the codec a router's queue needs on a
//! durable store: feature `router`); the codecs
//! ([`BytesCodec`], and `PostcardCodec` with `serde`); the operator API's [`Page`] and
//! [`DeadFilter`]; [`ErrorChain`], an error printed with its causes; and
//! [`shutdown_signal`]. Each feature of this crate turns on `leaseq-async`'s feature of the
//! same name (`cron`, `router`, `serde`, `tracing`, `metrics`, `opentelemetry`).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod cancel;
mod clock;
mod precise;
mod runtime;
mod signal;

pub use cancel::PoolExt;
pub use clock::TokioClock;
pub use runtime::{TokioRuntime, TokioTask, TokioTimer};
pub use signal::shutdown_signal;
// The core state machine's own types, and the trait the runtime implements.
pub use leaseq_async::{core, Backoff, Config, ConfigError, Jitter, Timestamp};
pub use leaseq_async::{BoxFuture, Runtime};
pub use leaseq_async::{ConservationError, Event, EventMask, Histogram, Stats};

/// A lease queue on tokio, its items kept by store `S`: in memory unless another
/// store is named (`leaseq_sqlite::SqliteStore`, `leaseq_postgres::PgStore`; or use
/// `SqliteQueue` / `PgQueue`).
pub type LeaseQueue<T, S = MemoryStore<T, TokioRuntime>> =
    leaseq_async::LeaseQueue<T, TokioRuntime, S>;
pub use leaseq_async::DEFAULT_MAX_LEASE;
pub use leaseq_async::{
    AckBatch, AdminError, BatchError, CancelError, InMemory, LeaseLost, NewQueueError, NoCodec,
    OpenStore, Page, Push, PushError, QueueBuilder, QueueSettings, Settling, UniqueKey,
    MAX_PRIORITY,
};
pub use leaseq_async::{BytesCodec, Codec, CodecError};
pub use leaseq_async::{ItemState, ItemView, LatencyAdvisor, MessageId, TypeReport};

/// A leased item from a tokio queue.
pub type Delivery<T, S = MemoryStore<T, TokioRuntime>> = leaseq_async::Delivery<T, TokioRuntime, S>;
pub use leaseq_async::{Acked, Extended, Nacked, Receipt, ReceiptError, SettleError, StoreError};
pub use leaseq_async::{CheckpointError, Progress, MAX_PROGRESS_BYTES};
pub use leaseq_async::{DeadLetter, Failure, Reason, RedriveError};
pub use leaseq_async::{Receive, ReceiveError, ReceiveStream};

/// A worker pool on tokio.
pub type Pool<T, S = MemoryStore<T, TokioRuntime>> = leaseq_async::Pool<T, TokioRuntime, S>;

/// A receiver with a prefetch (see [`leaseq_async::Consumer`]), on tokio.
pub type Consumer<T, S = MemoryStore<T, TokioRuntime>> = leaseq_async::Consumer<T, TokioRuntime, S>;
/// The typed job router (feature `router`): see [`leaseq_async::router`].
#[cfg(feature = "router")]
pub use leaseq_async::router;
pub use leaseq_async::KindPolicy;
pub use leaseq_async::{diagnose, Finding, FindingKind, Holding, StuckWorker, Watchdog};
#[cfg(feature = "router")]
pub use leaseq_async::{Envelope, EnvelopeCodec, JobKind, Router};
pub use leaseq_async::{ItemTimeout, Job, JobError, PoolBuilder, PoolReport, PoolStats, Stopping};

// The store behind a queue: the in-memory default, and the seam another store implements.
pub use leaseq_async::{
    Drive, MemoryStore, MemoryTicket, MemoryWaiting, Store, TakeHeartbeat, Taken,
};

// What a job service uses beside the queue and the pool, so that it needs this crate and a
// store crate only: periodic jobs (the core's schedule policy and the scheduler that pushes
// its ticks; `CronCalendar` with the feature `cron`), operator filters, the codecs of the
// durable stores (`PostcardCodec` with `serde`, `EnvelopeCodec` with `router`, above), error
// chains.
pub use leaseq_async::core::schedule::{self, CatchUp, Interval, Schedule};
#[cfg(feature = "serde")]
pub use leaseq_async::PostcardCodec;
pub use leaseq_async::ScheduleState;
pub use leaseq_async::{system_clock, Scheduler, SchedulerError, SchedulerStep, WallClock};
pub use leaseq_async::{Closing, DeadFilter, ErrorChain, ItemKind};
// The record of finished jobs a store keeps with a retention window (Postgres's
// `Options::retention`): its entries and the operator's query.
#[cfg(feature = "cron")]
pub use leaseq_async::{CronCalendar, CronError};
pub use leaseq_async::{FinishOutcome, Finished, HistoryQuery};
// For a store of your own, and for inspectors: the seam's other types, checkpoints, and the
// metric names.
pub use leaseq_async::{metrics, progress};
pub use leaseq_async::{
    Checkpointing, LeaseKey, LeaseSignal, StoredCounts, StoredItem, StoredState,
};
pub use leaseq_async::{ScheduleCommit, ScheduleCommitError, ScheduleCommitted, Withdrawn};
