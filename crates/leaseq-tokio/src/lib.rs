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
//! `leaseq-core`, re-exported here. It works on tokio's paused clock
//! (`#[tokio::test(start_paused = true)]`), so tests run in virtual time.
//!
//! ```
//! use std::time::Duration;
//! use leaseq_tokio::{Config, LeaseQueue};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let queue: LeaseQueue<String> = LeaseQueue::new(Config::new(Duration::from_secs(30))).unwrap();
//! queue.push("resize photo 17".to_string()).unwrap();
//!
//! let delivery = queue.receive().await.unwrap();
//! assert_eq!(delivery.item(), "resize photo 17");
//! assert_eq!(delivery.attempt(), 1);
//! delivery.ack().unwrap();
//! assert_eq!(queue.stats().acked, 1);
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod precise;
mod runtime;

pub use leaseq_async::*;
pub use runtime::{TokioRuntime, TokioTask, TokioTimer};

/// A lease queue on tokio.
pub type LeaseQueue<T> = leaseq_async::LeaseQueue<T, TokioRuntime>;
/// A leased item from a tokio queue.
pub type Delivery<T> = leaseq_async::Delivery<T, TokioRuntime>;
/// A worker pool on tokio.
pub type Pool<T> = leaseq_async::Pool<T, TokioRuntime>;
