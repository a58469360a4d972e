//! The cross-runtime scenarios of issue 3, written once over [`Runtime`] and a time unit.
//!
//! Each scenario is an `async fn(Env<R>)`; the test binaries (`tokio_paused.rs`,
//! `tokio_multi.rs`, `smol.rs`, `sim.rs`) run them on their runtime with
//! [`scenario_tests!`]. Every duration is a multiple of the unit `env.u`.
//!
//! On virtual time (`env.virtual_time`: tokio's paused clock, `SimRuntime`) the scenarios also
//! assert exact instants. On real time they assert only outcomes and counts, with enough
//! slack between competing deadlines (several units) to stay robust on a loaded machine,
//! and they wait on conditions (`within`, `until`) under a generous overall limit.
//!
//! Files: `env.rs` (the `Env`, store kinds, helpers and run log), `timeouts.rs` (scenarios
//! 1-3: hung and slow handlers), `failures.rs` (4-6: dropped delivery, panicking handler,
//! aborted worker), `stuck_workers.rs` (7-8: blocking overruns, watchdog),
//! `shutdown_cancel.rs` (9-10: graceful shutdown, cancelled receives); the test macros here.
// Each binary runs a subset (tokio's paused clock skips the blocking scenario).
#![allow(dead_code)]

mod env;
mod failures;
mod shutdown_cancel;
mod stuck_workers;
mod timeouts;

pub(crate) use env::*;
pub(crate) use failures::*;
pub(crate) use shutdown_cancel::*;
pub(crate) use stuck_workers::*;
pub(crate) use timeouts::*;

/// Generates one `#[test]` per scenario, each run through `$run` (the binary's
/// `fn run(scenario)`, which builds the runtime and the [`Env`]).
macro_rules! scenario_tests {
    ($run:ident: $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                $run(scenarios::$name);
            }
        )*
    };
}
pub(crate) use scenario_tests;

/// One `#[test]` per scenario that runs on every runtime, plus any listed after the runner
/// (the blocking scenario, for runtimes whose clock lets blocking work overrun a timeout).
macro_rules! all_scenario_tests {
    ($run:ident $(, $extra:ident)* $(,)?) => {
        scenarios::scenario_tests!($run:
            hung_handler_times_out,
            slow_handler_with_heartbeat_runs_once,
            slow_handler_without_heartbeat_acks_late,
            dropped_delivery_comes_back_at_once,
            panicking_handler_is_caught,
            aborted_worker_hands_its_item_back,
            watchdog_reports_stuck_worker,
            shutdown_short_grace_hands_items_back,
            shutdown_long_grace_lets_items_finish,
            cancelled_receive_loses_nothing,
            $($extra,)*
        );
    };
}
pub(crate) use all_scenario_tests;
