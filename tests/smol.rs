//! The cross-runtime scenarios on smol (`SmolRuntime::global()`), in real time.
//!
//! Real time: the scenarios assert outcomes and counts, never durations, and every wait is
//! on a condition under a generous limit (100 units).

mod scenarios;

use std::future::Future;
use std::time::Duration;

use leaseq_smol::SmolRuntime;
use scenarios::Env;

fn run<Fut: Future<Output = ()>>(scenario: impl FnOnce(Env<SmolRuntime>) -> Fut) {
    let env = Env::new(SmolRuntime::global(), Duration::from_millis(100), false);
    smol::block_on(scenario(env));
}

scenarios::all_scenario_tests!(run, blocking_handler_overruns_are_counted);
