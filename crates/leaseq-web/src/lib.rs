//! A web dashboard for leaseq queues: every queue's counts, its live items and dead letters
//! a page at a time, one item's payload (a router job's args as formatted JSON, other bytes
//! as text and hex), the schedules a queue keeps, its finished jobs where the store keeps a
//! record of them, and from that record the last hour's throughput and failure rate as charts;
//! mounted in a service with its pools ([`Dashboard::with_pool`]), a workers page. Server-rendered
//! HTML, charts drawn as SVG on the server, the stylesheet in the binary: no script, nothing
//! fetched from elsewhere.
//!
//! It reads through the [`Operator`] trait (`leaseq_async::operator`'s, which the `leaseq`
//! command line is written over too), implemented for a SQLite queue file
//! ([`SqliteOperator`], over `leaseq_sqlite::FileView`) and a PostgreSQL schema
//! ([`PgOperator`], over `leaseq_postgres::PgInspector`), and for the queues of the process
//! it is mounted in, on any store ([`LocalOperator`]: the service adds its queue handles;
//! every action on). With
//! [`PgOperator::with_actions`] it also redrives a dead letter and deletes a queue's dead
//! letters (as [`SqliteOperator::with_actions`] does on a file no other process owns): each
//! a POST carrying the dashboard's CSRF token, the purge after a confirmation
//! that shows the count; it cancels a queue's waiting items (all, or those of a job kind
//! and an id range: [`LiveQuery`]) after a confirmation likewise, and pauses and resumes
//! queues, each logged through `tracing`;
//! [`Dashboard::read_only`] turns actions off.
//!
//! Where the operator offers workflows and batches (`Capabilities::workflows`: a
//! [`LocalOperator`] with a queue added by `with_graph`), a queue's Workflows tab shows each
//! workflow and its steps (state, what each waits for, attempts, result size, last error;
//! Retry and Cancel workflow) and its Batches tab each batch's counts and callback.
//!
//! `/metrics` serves every queue's items by state (`leaseq_items{queue,state}`), its pause
//! flag (`leaseq_paused{queue}`) and, where the store says it without a scan (Postgres), the
//! age of its oldest ready item (`leaseq_oldest_ready_age_seconds{queue}`) in the Prometheus
//! text format, read from the store at each scrape.
//!
//! Two ways to run it: [`router`] (or [`Dashboard::router`]) mounted in a service's own
//! axum app, or standalone, `leaseq web sqlite FILE` / `leaseq web postgres URL` from the
//! command line ([`Dashboard::serve`]).
//!
//! Security: [`Dashboard::serve`] refuses an address other than loopback without
//! credentials ([`Auth`]: a bearer token or basic auth); every byte read from a store is
//! HTML-escaped (a payload holding `<script>` shows as text) and a Content-Security-Policy
//! forbids scripts besides; no page shows a connection string, a file path or a secret.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let view = leaseq_sqlite::FileView::open("jobs.db")?;
//! let app = leaseq_web::router(leaseq_web::SqliteOperator::new(view));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(listener, app).await?;
//! # Ok(()) }
//! ```
//!
//! Mounted in a service, over its own queues (here a memory queue):
//!
//! ```no_run
//! # use std::time::Duration;
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let jobs = leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(leaseq_tokio::Config::new(
//!     Duration::from_secs(30),
//! ))
//! .name("jobs")
//! .build()?;
//! let op = leaseq_web::LocalOperator::new().with(jobs.clone());
//! let app = axum::Router::new().nest("/ops", leaseq_web::Dashboard::new(op).base_path("/ops").router());
//! # let _ = app;
//! # Ok(()) }
//! ```

mod auth;
mod chart;
mod chart_time;
mod csrf;
mod dashboard;
mod html;
mod layout;
mod metrics;
mod operator;
mod pages;
mod payload;
mod pools;
mod query;
mod throughput;
mod throughput_cache;

pub use auth::Auth;
pub use dashboard::{Dashboard, ServeError};
pub use leaseq_postgres::PgOperator;
pub use leaseq_sqlite::UNNAMED;
pub use operator::{Capabilities, LocalOperator, Operator, OperatorError, SqliteOperator};
pub use query::{DeadQuery, LiveQuery};

/// The dashboard of `op` as a router at the root path, without credentials of its own
/// (the embedding app's middleware guards it): [`Dashboard::new`]`(op).router()`.
pub fn router<O: Operator>(op: O) -> axum::Router {
    Dashboard::new(op).router()
}
