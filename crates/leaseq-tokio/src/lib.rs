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

// leaseq's API, with TokioRuntime as the runtime of the aliases (the list is leaseq-async's, so
// the adapters cannot drift apart).
leaseq_async::runtime_facade!(TokioRuntime, "tokio");
