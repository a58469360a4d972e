//! Shared measurement code for leaseq's benchmarks and examples: adapter throughput against
//! plain channels, redelivery latency, heartbeat CPU cost and the core round trip. Both
//! `benches/adapters.rs` and `examples/bench_summary.rs` call these, so the figures they
//! print come from one implementation.
#![forbid(unsafe_code)]

pub mod cpu;
pub mod demo;
pub mod latency;
#[cfg(feature = "postgres")]
pub mod pg_bare;
#[cfg(feature = "postgres")]
pub mod pg_refill_bench;
#[cfg(feature = "postgres")]
pub mod pg_size_bench;
#[cfg(feature = "postgres")]
pub mod pg_store_bench;
#[cfg(feature = "postgres")]
pub mod pg_tls_bench;
#[cfg(all(feature = "sqlite", feature = "postgres"))]
pub mod pipeline;
pub mod rng;
pub mod roundtrip;
pub mod throughput;

/// The README's code blocks, compiled and run as doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
