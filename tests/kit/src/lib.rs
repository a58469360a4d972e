//! What leaseq's tests share (dev-only, never published): the time helpers of the
//! exact-time tests, seeded property-test configs, a calendar from a tick table, and (behind
//! features) the sample job kinds of the router tests and the store fixtures.
//!
//! Used by the integration tests (`tests/*.rs`) of the workspace's crates and of the root
//! suite, never by unit tests in `src/` (the kit depends on the crates it serves: a crate's
//! own unit-test build and the kit's copy of it would be two crates).

pub mod calendar;
pub mod core_queue;
#[cfg(feature = "proptest")]
pub mod seeded;
pub mod time;
