//! leaseq on [smol](https://docs.rs/smol) / async-io: in-process work queues with the
//! delivery guarantees of a message broker.
//!
//! A received item is *leased*, not taken: it stays in the queue, invisible for a visibility
//! timeout, and comes back unless the worker acks it with its receipt. Attempts are counted,
//! failures back off, and an item that keeps failing goes to the dead letters with its
//! attempt count, reason and last error.
//!
//! This crate is the smol adapter: [`SmolRuntime`] implements leaseq's small
//! [`Runtime`] trait with a TSC clock (about 10 ns a read), async-io timers, smol's own
//! executor (`smol::spawn`: [`SmolRuntime::global`]) or an `async-executor` executor you
//! drive ([`SmolRuntime::with_executor`]), and the `blocking` thread pool; the aliases below
//! fix it as the runtime. Everything else comes from `leaseq-async` and `leaseq-core`,
//! re-exported here. [`shutdown_signal`] is the process's SIGTERM or SIGINT, the normal way to
//! stop a service's [`Pool`]: `pool.shutdown_on(shutdown_signal(), grace)`, where a deploy
//! costs no item an attempt (see [`Pool::shutdown`](leaseq_async::Pool::shutdown)).
//!
//! ```
//! use std::time::Duration;
//! use leaseq_smol::{Config, LeaseQueue, SmolRuntime};
//!
//! let rt = SmolRuntime::global();
//! smol::block_on(async {
//!     let queue: LeaseQueue<String> =
//!         LeaseQueue::with_runtime(rt, Config::new(Duration::from_secs(30))).unwrap();
//!     queue.push("resize photo 17".to_string()).await.unwrap();
//!     let delivery = queue.receive().await.unwrap();
//!     assert_eq!(delivery.item(), "resize photo 17");
//!     delivery.ack().await.unwrap();
//!     assert_eq!(queue.stats().acked, 1);
//! });
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

mod runtime;
mod signal;

pub use runtime::{SmolRuntime, SmolTask, SmolTimer};
pub use signal::shutdown_signal;

// leaseq's API, with SmolRuntime as the runtime of the aliases (the list is leaseq-async's, so
// the adapters cannot drift apart).
leaseq_async::runtime_facade!(SmolRuntime, "smol");
