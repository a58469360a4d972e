//! The cross-runtime scenarios on the durable SQLite store, on smol, in real time.
//!
//! Real time, not virtual: the store's writer is a thread, and a virtual clock jumps ahead
//! while it commits (a receive waits for its attempt's commit), so exact instants cannot
//! hold. The scenarios assert outcomes and counts with the real-time tolerances of
//! `smol.rs`.

mod scenarios;
mod sqlite_store;

use std::future::Future;
use std::time::Duration;

use leaseq_smol::SmolRuntime;
use scenarios::Env;
use sqlite_store::Sqlite;

fn run<Fut: Future<Output = ()>>(scenario: impl FnOnce(Env<SmolRuntime, Sqlite>) -> Fut) {
    let _turn = sqlite_store::one_at_a_time();
    let store = Sqlite::default();
    let env = Env::new(SmolRuntime::global(), Duration::from_millis(100), false)
        .with_store(store.clone());
    smol::block_on(scenario(env));
    store.remove_files();
}

scenarios::all_scenario_tests!(run, blocking_handler_overruns_are_counted);
