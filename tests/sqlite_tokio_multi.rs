//! The cross-runtime scenarios on the durable SQLite store, on tokio's multi-thread runtime,
//! in real time (see `sqlite_smol.rs` for why not virtual time).

mod scenarios;
mod sqlite_store;

use std::future::Future;
use std::time::Duration;

use leaseq_test_kit::runtime::multi_thread;
use leaseq_tokio::TokioRuntime;
use scenarios::Env;
use sqlite_store::Sqlite;

fn run<Fut: Future<Output = ()>>(scenario: impl FnOnce(Env<TokioRuntime, Sqlite>) -> Fut) {
    let rt = multi_thread();
    let _turn = sqlite_store::one_at_a_time();
    let store = Sqlite::default();
    rt.block_on(async {
        let rt = TokioRuntime::new(tokio::runtime::Handle::current());
        let env = Env::new(rt, Duration::from_millis(100), false).with_store(store.clone());
        scenario(env).await;
    });
    store.remove_files();
}

scenarios::all_scenario_tests!(run, blocking_handler_overruns_are_counted);
