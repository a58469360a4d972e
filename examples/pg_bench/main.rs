//! Issue 10's benchmark: the leaseq-postgres store beside the bare SKIP LOCKED loop, in one
//! run, on the same server.
//!
//! ```text
//! LEASEQ_PG_URL='host=127.0.0.1 port=5432 user=postgres dbname=test' \
//!     cargo run --release --features postgres --example pg_bench -- [options]
//! ```
//!
//! **Throughput** (the default): a discarded warm-up round (a tenth of the items), then
//! `--rounds` rounds (3), each running these, in an order that rotates from round to round:
//!
//! - **bare**: the bare loop (`leaseq_bench_kit::pg_bare`: 4 workers, claim 16, batched ack);
//! - **store**: the store end to end (`leaseq_bench_kit::pg_store_bench::run_store`: 4 workers
//!   `receive_batch(16)` + `ack_batch`, a producer `push_batch`ing 256 at a time) on one
//!   queue name for the whole run, as a long-lived queue;
//! - **fresh queue**: the same on a new queue name each round, in the same table (what a new
//!   queue meets before the store's first `VACUUM (ANALYZE)` counts its rows);
//! - **pool**: a `PgPool` of 4 workers with a no-op handler on one queue name
//!   (`--pool-items`, 20,000; 0 to skip), its fetcher's default prefetch; **pool+prefetch**
//!   the same with the store's `Options::prefetch` 32; **pool, prefetch 32** with the
//!   pool's own `PoolBuilder::prefetch(32)` instead;
//! - **store, no upkeep** (`--upkeep-off`): **store** with `vacuum_after_rows` 0;
//! - **store, capacity** (`--capacity N`): **store** on a queue bounded at `N` live items
//!   (each insert counts them under the queue's advisory lock).
//!
//! The bare loop and the store get the same `--items` (100,000) of 16 bytes. Prints items/s
//! per round with each one's ratio to the bare loop in that round, then the medians.
//!
//! **Table size** (`--table-size`): `pg_total_relation_size` of the store's items table in a
//! fresh schema with `--live` items waiting (10,000), then after `--flow` more items
//! (1,000,000) were pushed and acked while about `--live` stayed waiting; once with the
//! store's upkeep at its defaults (`VACUUM` every 5,000 rows removed, bloated indexes
//! rebuilt), once with the `VACUUM` but no index rebuilds, once with neither, and once more
//! for each `--vacuum-after N` given (`vacuum_after_rows` = N). `--all` runs both parts.
//!
//! **Claims whatever the statistics say** (`--refill`): `--rounds` rounds (30 here) of the
//! store draining a backlog of `--items` pushed before the clock, alternating a fresh queue
//! name and a long-lived queue drained, its table `VACUUM ANALYZE`d empty (`reltuples` = 0)
//! and refilled (`leaseq_bench_kit::pg_refill_bench`); prints each round's items/s, then the
//! min and median, and the bare loop (`--items`, pushing while it claims) before the first
//! round and after the last, as the machine's reference.
//!
//! **TLS** (`--tls`): `--rounds` rounds (3) of **store** and **pool** in plain text
//! (`sslmode=disable`) and over TLS (`verify-full` against `LEASEQ_PG_TLS_CA` if set, else
//! `require`), alternating which goes first (`leaseq_bench_kit::pg_tls_bench`); prints each
//! round's items/s and the TLS/plain ratios, then the medians.
//!
//! **Transactional push** (`--tx`): commit-to-start latency, p50 / p99, of a push inside the
//! caller's transaction (`PgStore::push_in`) beside a plain push's, `--samples` (200) of
//! each, alternating, with one idle worker in another open of the queue (polling every
//! 30 s: the commit's notification wakes it) (`leaseq_bench_kit::pg_tx_bench`).
//!
//! **Record of finished jobs** (`--history`): `--rounds` rounds (3) of a `PgPool` of 4
//! workers with `Options::retention` off and on (1 h), alternating which goes first, after a
//! discarded warm-up (`leaseq_bench_kit::pg_history_bench`), in `leaseq_bench_history`
//! (dropped first); prints each round's items/s and the on/off ratio, then the medians,
//! against issue 30's goal (on >= 0.8 x off), and checks that the store kept an entry for
//! every item it handled with retention on.
//!
//! **Worker processes** (`--procs N`): `--rounds` rounds (3) of `N` OS processes (this
//! binary again), each a `PgPool` of 4 on one queue, and this process pushing `--items`,
//! without and with a capacity (`--capacity`, 10,000,000: never reached), alternating
//! (`leaseq_bench_kit::pg_procs_bench`), in `leaseq_bench_procs` (dropped first); every
//! item handled once, checked; issue 32's goal: with >= 0.9 x without at 8 processes.
//!
//! **Key windows' triggers** (`--windows`): `--rounds` rounds (3) of a `PgPool` of 4
//! workers with schema step 12's row triggers dropped and in place, alternating, after a
//! discarded warm-up (`leaseq_bench_kit::pg_windows_bench`), in `leaseq_bench_windows`
//! (dropped first); issue 32's goal: with >= 0.95 x without.
//!
//! Uses the schemas `leaseq_bench` (the bare loop's table), `leaseq_bench_store` and
//! `leaseq_bench_size` (dropped and recreated), and `leaseq_bench_tls` (`--tls`).
//! Absolute figures are the machine's; compare within one run.

use std::process::ExitCode;

use leaseq_bench_kit::cpu::process_cpu_time;
use leaseq_bench_kit::pg_bare::run_bare;
use leaseq_bench_kit::pg_refill_bench::{run_refill_rounds, Start};
use leaseq_bench_kit::pg_size_bench::{table_size, SizeReport, TableSize};
use leaseq_bench_kit::pg_store_bench::{
    drop_schema, open_capped, run_pool, run_store, run_store_on, server_cpu_time, unique,
    BenchError,
};
use leaseq_postgres::Options;

/// The server used when `LEASEQ_PG_URL` is not set.
const DEFAULT_URL: &str = "host=127.0.0.1 port=5432 user=postgres dbname=test";
const STORE_SCHEMA: &str = "leaseq_bench_store";
/// The `--tls` runs' own (kept, as `STORE_SCHEMA`).
const TLS_SCHEMA: &str = "leaseq_bench_tls";
/// Dropped and created again for each table-size run.
const SIZE_SCHEMA: &str = "leaseq_bench_size";
const WORKERS: usize = 4;
const CLAIM: usize = 16;

struct Args {
    rounds: Option<usize>,
    refill: bool,
    items: u64,
    pool_items: u64,
    throughput: bool,
    table_size: bool,
    upkeep_off: bool,
    live: u64,
    flow: u64,
    vacuum_after: Vec<u64>,
    capacity: Option<usize>,
    tls: bool,
    tx: bool,
    history: bool,
    windows: bool,
    procs: Option<usize>,
    samples: usize,
}

/// What one run measures.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// The bare SKIP LOCKED loop.
    Bare,
    /// The store on one queue name for the whole run (a long-lived queue).
    Store,
    /// The store on a queue name of its own each round (a new queue in a used table).
    Fresh,
    /// A `PgPool` of 4 workers, no-op handler, on one queue name for the whole run.
    Pool,
    /// The same with `Options::prefetch` = [`PREFETCH`] (leases claimed ahead).
    PoolPrefetch,
    /// [`Kind::Store`] with the store's upkeep off (`vacuum_after_rows` = 0): what the
    /// `VACUUM`s and index rebuilds cost (`--upkeep-off`).
    NoUpkeep,
    /// A `PgPool` whose own fetcher prefetches [`PREFETCH`] (`PoolBuilder::prefetch`), the
    /// store's `Options::prefetch` 0.
    PoolOwnPrefetch,
    /// [`Kind::Store`] on a bounded queue (`--capacity N`): what counting the live rows
    /// under the queue's advisory lock costs each insert.
    Capped,
}

/// The prefetch of [`Kind::PoolPrefetch`].
const PREFETCH: usize = 32;

#[tokio::main]
async fn main() -> ExitCode {
    let url = std::env::var("LEASEQ_PG_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned());
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some(leaseq_bench_kit::pg_procs_bench::WORKER_ARG) {
        return match leaseq_bench_kit::pg_procs_bench::worker(&url, &argv[1..]).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("worker: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mut r = Ok(());
    if a.throughput {
        r = throughput(&url, &a).await;
    }
    if r.is_ok() && a.refill {
        r = refill(&url, &a).await;
    }
    if r.is_ok() && a.tls {
        r = tls(&url, &a).await;
    }
    if r.is_ok() && a.tx {
        r = tx(&url, &a).await;
    }
    if r.is_ok() && a.history {
        r = history(&url, &a).await;
    }
    if let (true, Some(n)) = (r.is_ok(), a.procs) {
        r = procs(&url, &a, n).await;
    }
    if r.is_ok() && a.windows {
        r = windows(&url, &a).await;
    }
    if r.is_ok() && a.table_size {
        r = sizes(&url, &a).await;
    }
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e} ({e:?})");
            ExitCode::FAILURE
        }
    }
}

mod args;
mod sections;
mod throughput;

use args::*;
use sections::*;
use throughput::*;
