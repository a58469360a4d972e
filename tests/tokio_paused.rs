//! The cross-runtime scenarios on tokio's current-thread runtime with paused (virtual) time.
//!
//! Virtual time: the scenarios also assert exact instants. The blocking-handler scenario is
//! not run here: tokio's paused clock does not auto-advance while `spawn_blocking` work runs,
//! so the item timeout that scenario needs would never fire.

mod scenarios;

use std::future::Future;
use std::time::Duration;

use leaseq_tokio::TokioRuntime;
use scenarios::Env;

fn run<Fut: Future<Output = ()>>(scenario: impl FnOnce(Env<TokioRuntime>) -> Fut) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("tokio runtime");
    rt.block_on(async {
        let rt = TokioRuntime::new(tokio::runtime::Handle::current());
        scenario(Env::new(rt, Duration::from_millis(100), true)).await;
    });
}

scenarios::all_scenario_tests!(run);
