//! The cross-runtime scenarios on the Postgres store, on tokio's multi-thread runtime, in
//! real time (`cargo test --features postgres --test postgres_tokio_multi`).
//!
//! Tokio only: the store's background tasks (writer, claimer, settler, listener) and its
//! database driver (`tokio-postgres`) run on tokio, and `open` must be called inside a tokio
//! runtime, so there is no smol or `SimRuntime` binary. Multi-thread, because the scenario
//! helpers read the store's dead letters and row counts from sync code through
//! `block_in_place`. Real time, not virtual: every wait ends on a database round trip,
//! which a paused clock would jump past. The scenarios assert outcomes and counts with the
//! real-time tolerances of `tokio_multi.rs`, on a unit of 100 ms like the SQLite binaries.
//!
//! Needs the server of the crate's own tests (`LEASEQ_PG_URL`, by default
//! `host=127.0.0.1 port=5432 user=postgres dbname=test`); without one every test passes
//! after a loud SKIPPED note (it fails instead with `LEASEQ_PG_REQUIRED=1`). Each queue is a
//! new name in this test process's own schema (`leaseq_test_<pid>_<nanos>`).

mod postgres_store;
mod scenarios;

use std::future::Future;
use std::time::Duration;

use leaseq_test_kit::runtime::multi_thread;
use leaseq_tokio::TokioRuntime;
use postgres_store::Postgres;
use scenarios::Env;

/// The unit every duration of a scenario is a multiple of.
const UNIT: Duration = Duration::from_millis(100);

fn run<Fut: Future<Output = ()>>(scenario: impl FnOnce(Env<TokioRuntime, Postgres>) -> Fut) {
    let Some(url) = postgres_store::server_url() else {
        return;
    };
    let rt = multi_thread();
    // One scenario at a time, as for SQLite: several real-time scenarios at once on a small
    // machine stretch their waits past what they allow.
    let _turn = postgres_store::one_at_a_time();
    rt.block_on(async {
        let rt = TokioRuntime::new(tokio::runtime::Handle::current());
        let store = Postgres { url, u: UNIT };
        let env = Env::new(rt, UNIT, false).with_store(store);
        scenario(env).await;
    });
}

scenarios::all_scenario_tests!(run, blocking_handler_overruns_are_counted);
