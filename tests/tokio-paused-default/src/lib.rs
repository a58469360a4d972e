//! No library: this package holds one test (`tests/paused.rs`), built without
//! `leaseq-tokio/test-util` (see `Cargo.toml`).
