//! The cross-runtime scenarios on `SimRuntime`, leaseq's own virtual-time runtime.
//!
//! Virtual time: the scenarios also assert exact instants.

mod scenarios;

use std::future::Future;
use std::time::Duration;

use leaseq_async::SimRuntime;
use scenarios::Env;

fn run<Fut: Future<Output = ()>>(scenario: impl FnOnce(Env<SimRuntime>) -> Fut) {
    let rt = SimRuntime::new();
    rt.block_on(scenario(Env::new(
        rt.clone(),
        Duration::from_millis(100),
        true,
    )));
}

scenarios::scenario_tests!(run:
    hung_handler_times_out,
    slow_handler_with_heartbeat_runs_once,
    slow_handler_without_heartbeat_acks_late,
    dropped_delivery_comes_back_at_once,
    panicking_handler_is_caught,
    aborted_worker_hands_its_item_back,
    blocking_handler_overruns_are_counted,
    watchdog_reports_stuck_worker,
    shutdown_short_grace_hands_items_back,
    shutdown_long_grace_lets_items_finish,
    cancelled_receive_loses_nothing,
);
