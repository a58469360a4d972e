//! What leaseq's tests share (dev-only, never published): time helpers, seeded
//! property-test configs, seeded random numbers, the core's limit scopes, a calendar from a
//! tick table, child processes, a command's output checked, and behind features
//! virtual-time runs (`sim`), steps on any store (`async`), the router tests' job kinds
//! (`jobs`), the SQLite and Postgres fixtures (`sqlite`, `postgres`) and the multi-process
//! schedule tests' ledger (`schedules`); the multi-process dependency tests' checker
//! (`graph_check`).
//!
//! Used by the integration tests (`tests/*.rs`) of the workspace's crates and of the root
//! suite, never by unit tests in `src/` (the kit depends on the crates it serves: a crate's
//! own unit-test build and the kit's copy of it would be two crates).

pub mod calendar;
pub mod child;
pub mod core_queue;
#[cfg(feature = "proptest")]
pub mod dag;
#[cfg(feature = "async")]
pub mod deploy;
pub mod envelope;
#[cfg(feature = "postgres")]
pub mod gated;
pub mod graph_check;
#[cfg(feature = "jobs")]
pub mod jobs;
pub mod output;
#[cfg(feature = "postgres")]
pub mod pg;
#[cfg(feature = "postgres")]
mod pg_checks;
#[cfg(feature = "postgres")]
mod pg_graph;
mod reexports;
pub mod rng;
#[cfg(feature = "tokio")]
pub mod runtime;
#[cfg(feature = "schedules")]
pub mod schedule_check;
#[cfg(feature = "schedules")]
pub mod schedule_run;
pub mod scopes;
#[cfg(feature = "proptest")]
pub mod seeded;
#[cfg(feature = "sim")]
pub mod sim;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(feature = "async")]
pub mod steps;
pub mod time;
#[cfg(feature = "otel")]
pub mod trace;
