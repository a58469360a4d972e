//! Drives a `leaseq_core::Queue` with an arbitrary stream of operations (the same ones as
//! `crates/leaseq-core/tests/model/`, plus jitter and arbitrary durations; priority levels,
//! unique keys, replacement and cancel included), checks `check_invariants()` after every
//! operation, checks what each result promises, and at the end runs the queue dry and checks
//! the conservation partition: every pushed id is in exactly one of acked, dead-lettered
//! (kept or taken), cancelled (or replaced), still queued.
//!
//! `ops/input.rs` is the input and the config built from it, `ops/driver.rs` one step and
//! its promises, `ops/checks.rs` the levels' check, the keyed push and the end of a run.
#![no_main]

#[path = "ops/checks.rs"]
mod checks;
#[path = "ops/driver.rs"]
mod driver;
#[path = "ops/input.rs"]
mod input;

use libfuzzer_sys::fuzz_target;

use crate::driver::Driver;
use crate::input::{build_config, Input};

fuzz_target!(|input: Input| {
    let Some(config) = build_config(&input.config) else {
        return;
    };
    let mut d = Driver::new(config);
    for (time, op) in input.steps {
        d.step(time, op);
    }
    d.finish();
});
