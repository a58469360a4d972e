//! `leaseq-bench-kit`: the code leaseq's benchmarks and examples share (not published). The
//! root package's `benches/`, `examples/` and `tests/` call it, so the figures they print come
//! from one implementation:
//!
//! - adapter throughput against plain channels (`throughput`), redelivery latency
//!   (`latency`), the core round trip (`roundtrip`), process CPU time (`cpu`): used by both
//!   `benches/adapters.rs` and `examples/bench_summary.rs`;
//! - the demos' command line, seeded choice of hung items and progress line (`demo`), and the
//!   seeded PRNG of the demos and randomized tests (`rng`);
//! - feature `postgres`: the bare `SKIP LOCKED` baseline (`pg_bare`) and the Postgres store's
//!   runs (`pg_store_bench`, `pg_size_bench`, `pg_refill_bench`) of `examples/pg_bench.rs`;
//! - features `sqlite` and `postgres`: issue 17's side-by-side benchmark (`pipeline`,
//!   `examples/pipeline_bench.rs`), with the broker baselines under feature `brokers`.
#![forbid(unsafe_code)]

pub mod cpu;
pub mod demo;
pub mod latency;
#[cfg(feature = "postgres")]
pub mod pg_bare;
#[cfg(feature = "web")]
pub mod pg_dashboard_bench;
#[cfg(feature = "postgres")]
pub mod pg_fanout_split;
#[cfg(feature = "postgres")]
pub mod pg_flow_bench;
#[cfg(feature = "postgres")]
pub mod pg_graph_bench;
#[cfg(feature = "postgres")]
pub mod pg_history_bench;
#[cfg(feature = "postgres")]
pub mod pg_procs_bench;
#[cfg(feature = "postgres")]
pub mod pg_refill_bench;
#[cfg(feature = "postgres")]
pub mod pg_size_bench;
#[cfg(feature = "postgres")]
pub mod pg_store_bench;
#[cfg(feature = "postgres")]
pub mod pg_tls_bench;
#[cfg(feature = "postgres")]
pub mod pg_tx_bench;
#[cfg(feature = "postgres")]
pub mod pg_windows_bench;
#[cfg(all(feature = "sqlite", feature = "postgres"))]
pub mod pipeline;
pub mod rng;
pub mod roundtrip;
pub mod throughput;

/// The README's code blocks, compiled and run as doc tests (`cargo test --workspace`; the
/// SQLite and Postgres blocks with this crate's features `sqlite` and `postgres`). They live
/// here rather than in a library of the root package: doc tests use the dev-dependencies of
/// the package they are in, and the README's `#[tokio::main]` needs tokio's `macros`
/// feature, which as a root dev-dependency would be built for every example too.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
