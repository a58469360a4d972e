//! A typed job router (feature `router`): one queue, many kinds of job, each with its own
//! handler and retry rules, dispatched by a [`Pool`](crate::Pool).
//!
//! - A kind of job is a type: [`JobKind`] gives it a name ([`KIND`](JobKind::KIND)) and its
//!   args are the type's `serde` form, as River's `JobArgs` or graphile-worker's task
//!   payloads.
//! - The queue holds [`Envelope`]s (the kind and the args, encoded), made with
//!   [`Envelope::new`] for pushing; a durable store keeps them with [`EnvelopeCodec`].
//! - A [`Router`] maps each kind to its handler, which gets a [`Job`](crate::Job) of the
//!   decoded args, and to its [`KindPolicy`](leaseq_core::KindPolicy);
//!   [`PoolBuilder::spawn_router`](crate::PoolBuilder::spawn_router) starts the workers.
//! - An unknown kind, bytes that are no envelope, and args that do not decode as their
//!   kind's are dead-lettered at once ([`Reason::Rejected`](leaseq_core::Reason::Rejected),
//!   the cause as the last error), never retried.
//!
//! # The stored bytes
//!
//! An envelope is stored as byte 0 = the kind's length L (1..=255), bytes 1..=L = the kind
//! in UTF-8, then the args as JSON. [`kind_of`] reads the kind of a stored payload, so
//! tools (the `leaseq` CLI) can count and filter jobs by kind without their types.
//!
//! JSON, rather than a compact binary format such as postcard, because a queue of jobs
//! outlives a release of its code: a job pushed by the old producer is handled by the new
//! handler and back, and JSON lets args gain fields (`#[serde(default)]`) and ignore ones
//! they no longer know, where a format without field names breaks on any change. It is
//! also readable where operators look, in a CLI's peek and from SQL, as River,
//! graphile-worker and Oban keep their args. Args are small; the envelope costs its kind's
//! length plus one byte.
//!
//! ```
//! use std::time::Duration;
//! use leaseq_async::router::{Envelope, JobKind, Router};
//! use leaseq_async::{Job, JobError, LeaseQueue, Page, Pool, SimRuntime};
//! use leaseq_core::{Config, KindPolicy, Reason};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct SendEmail {
//!     to: String,
//! }
//! impl JobKind for SendEmail {
//!     const KIND: &'static str = "send_email";
//! }
//!
//! #[derive(Serialize, Deserialize)]
//! struct Resize {
//!     width: u32,
//! }
//! impl JobKind for Resize {
//!     const KIND: &'static str = "resize";
//! }
//!
//! let rt = SimRuntime::new();
//! rt.block_on({
//!     let rt = rt.clone();
//!     async move {
//!         let config = Config::new(Duration::from_secs(60)).with_max_attempts(5);
//!         let queue = LeaseQueue::with_runtime(rt, config).unwrap();
//!         queue.push(Envelope::new(&SendEmail { to: "ann@example.com".into() }).unwrap()).await.unwrap();
//!         queue.push(Envelope::new(&Resize { width: 0 }).unwrap()).await.unwrap();
//!         // A kind nobody handles: dead-lettered at once.
//!         queue.push(Envelope::from_parts("fax", b"{}").unwrap()).await.unwrap();
//!
//!         let router = Router::new()
//!             .route::<SendEmail, _>(|job: Job<SendEmail>| async move {
//!                 assert_eq!(job.item.to, "ann@example.com");
//!                 Ok(())
//!             })
//!             // Resizes get 2 attempts and 10 s each.
//!             .route_with::<Resize, _>(
//!                 KindPolicy::new().with_max_attempts(2).with_timeout(Duration::from_secs(10)),
//!                 |job: Job<Resize>| async move {
//!                     if job.item.width == 0 {
//!                         return Err(JobError::permanent("width 0"));
//!                     }
//!                     Ok(())
//!                 },
//!             );
//!         let pool = Pool::builder(queue.clone()).workers(2).spawn_router(router);
//!         queue.wait_empty().await;
//!         let report = pool.shutdown(Duration::from_secs(1)).await;
//!         assert_eq!((report.stats.ok, report.stats.permanent), (1, 2));
//!
//!         // In id order: the resize, then the fax.
//!         let dead = queue.dead_letters(Page::first(10)).await.unwrap();
//!         assert_eq!(dead[1].reason, Reason::Rejected);
//!         assert_eq!(
//!             dead[1].last_error.as_deref(),
//!             Some("unknown job kind `fax`: no handler registered")
//!         );
//!     }
//! });
//! ```

mod codec;
mod envelope;
mod routes;
mod spawn;
#[cfg(feature = "tracing")]
mod trace;
mod traceparent;

pub use codec::EnvelopeCodec;
pub use envelope::{args_of, kind_of, traceparent_of, Envelope, EnvelopeError};
pub use routes::{RouteError, Router};

/// A kind of job: its name on the queue and, as the type's `serde` form, its args.
///
/// The name is what routes a job to its handler and what operators see: keep it stable
/// across releases (renaming a type is fine, renaming its `KIND` strands the queued jobs
/// under the old one). It must be 1 to 255 bytes long (checked when the code compiles).
///
/// ```
/// use leaseq_async::router::JobKind;
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Reindex {
///     table: String,
///     #[serde(default)]
///     full: bool,
/// }
///
/// impl JobKind for Reindex {
///     const KIND: &'static str = "reindex";
/// }
/// ```
///
/// An empty name (or one over 255 bytes) stops the build where an envelope is made:
///
/// ```compile_fail
/// use leaseq_async::router::{Envelope, JobKind};
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Nameless;
///
/// impl JobKind for Nameless {
///     const KIND: &'static str = "";
/// }
///
/// let _ = Envelope::new(&Nameless);
/// ```
pub trait JobKind: serde::Serialize + serde::de::DeserializeOwned + Send + 'static {
    /// The kind's name.
    const KIND: &'static str;
}
