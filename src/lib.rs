//! Workspace root package: integration tests, benchmarks and examples live beside it.
