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

scenarios::all_scenario_tests!(run, blocking_handler_overruns_are_counted);
