//! `leaseq-suite`, the root package: the cross-runtime integration tests (`tests/`), the
//! benchmarks (`benches/`, with the code they share in `benches/kit`) and the examples
//! (`examples/`). This library target holds nothing but the README's code blocks, compiled
//! and run as doc tests (doc tests need a library target).
#![forbid(unsafe_code)]

/// The README's code blocks, compiled and run as doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
