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
//! in UTF-8, then, optionally, a trace block (byte 0x01, a length byte N, then N bytes: the
//! W3C `traceparent` of the span that pushed the job, 55 ASCII bytes), then the args as
//! JSON. [`kind_of`] reads the kind of a stored payload, so tools (the `leaseq` CLI, SQL's
//! `substr(payload, 2, get_byte(payload, 0))`) can count and filter jobs by kind without
//! their types; [`args_of`] reads the args and [`traceparent_of`] the trace context. The
//! block's mark is a byte no JSON text starts with, so an envelope without one (as all
//! were before it) reads as it always did, and one made by another language's producer
//! needs no block at all.
//!
//! JSON, rather than a compact binary format such as postcard, because a queue of jobs
//! outlives a release of its code: a job pushed by the old producer is handled by the new
//! handler and back, and JSON lets args gain fields (`#[serde(default)]`) and ignore ones
//! they no longer know, where a format without field names breaks on any change. It is
//! also readable where operators look, in a CLI's peek and from SQL, as River,
//! graphile-worker and Oban keep their args. Args are small; the envelope costs its kind's
//! length plus one byte (and 57 with a trace block).
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
//!
//! # Trace context
//!
//! With the feature `tracing`, each handler runs in a `leaseq.job` span (fields `kind`,
//! `id`, `attempt` and, if the envelope carries one, `traceparent`, so logs of the producer
//! and the handler join on it). With the feature `opentelemetry`, [`Envelope::new`]
//! records the W3C `traceparent` of the current span's OpenTelemetry context (through a
//! `tracing-opentelemetry` layer), and the `leaseq.job` span's OpenTelemetry parent is that
//! context: one trace shows the push, the wait on the queue and the run, whichever process
//! handles the job. A producer without OpenTelemetry (or in another language) sets one
//! with [`Envelope::with_traceparent`], or writes the block itself. A block that holds no
//! valid `traceparent` is ignored: the job runs, in a trace of its own.
//!
//! ```
//! use leaseq_async::router::Envelope;
//!
//! let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
//! let job = Envelope::from_parts("send_email", b"{}").unwrap().with_traceparent(tp).unwrap();
//! assert_eq!(job.traceparent(), Some(tp));
//! assert_eq!(job.kind(), Some("send_email")); // the kind still first
//! ```
#![cfg_attr(
    feature = "opentelemetry",
    doc = r#"
With `opentelemetry`, the pushing span's context is taken as it is (here with the SDK's
tracer; in production, one exporting to a collector):

```
use leaseq_async::router::{Envelope, JobKind, Router};
use leaseq_async::Job;
use opentelemetry::trace::TracerProvider as _;
use tracing_subscriber::layer::SubscriberExt;

#[derive(serde::Serialize, serde::Deserialize)]
struct SendEmail {
    to: String,
}
impl JobKind for SendEmail {
    const KIND: &'static str = "send_email";
}

let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
let tracing = tracing_subscriber::registry()
    .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("shop")));
tracing::subscriber::set_global_default(tracing).unwrap();

// The producer, in its request's span: the envelope carries that span's context.
let job = tracing::info_span!("checkout")
    .in_scope(|| Envelope::new(&SendEmail { to: "ann@example.com".into() }))
    .unwrap();
assert!(job.traceparent().is_some());
// Pushed, then taken by a pool in any process: the handler runs in a `leaseq.job` span
// that is a child of `checkout`.
let router = Router::new().route::<SendEmail, _>(|job: Job<SendEmail>| async move {
    tracing::info!(to = %job.item.to, "sending"); // an event of the `leaseq.job` span
    Ok(())
});
# drop(router);
```
"#
)]

mod codec;
mod envelope;
mod envelope_error;
mod routes;
mod spawn;
#[cfg(feature = "tracing")]
mod trace;
mod traceparent;

pub use codec::EnvelopeCodec;
pub use envelope::{args_of, kind_of, traceparent_of, Envelope};
pub use envelope_error::EnvelopeError;
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
