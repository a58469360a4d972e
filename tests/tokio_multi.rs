//! The cross-runtime scenarios on tokio's multi-thread runtime, in real time.
//!
//! Real time: the scenarios assert outcomes and counts, never durations, and every wait is
//! on a condition under a generous limit (100 units).

mod scenarios;

use std::future::Future;
use std::time::Duration;

use leaseq_test_kit::runtime::multi_thread;
use leaseq_tokio::TokioRuntime;
use scenarios::Env;

fn run<Fut: Future<Output = ()>>(scenario: impl FnOnce(Env<TokioRuntime>) -> Fut) {
    let rt = multi_thread();
    rt.block_on(async {
        let rt = TokioRuntime::new(tokio::runtime::Handle::current());
        scenario(Env::new(rt, Duration::from_millis(100), false)).await;
    });
}

scenarios::all_scenario_tests!(run, blocking_handler_overruns_are_counted);
