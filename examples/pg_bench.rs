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

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        rounds: None,
        refill: false,
        items: 100_000,
        pool_items: 20_000,
        throughput: true,
        table_size: false,
        upkeep_off: false,
        live: 10_000,
        flow: 1_000_000,
        vacuum_after: Vec::new(),
        capacity: None,
        tls: false,
        tx: false,
        history: false,
        windows: false,
        procs: None,
        samples: 200,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut num = || -> Result<u64, String> {
            let v = it.next().ok_or(format!("{flag} needs a number"))?;
            v.replace('_', "")
                .parse()
                .map_err(|e| format!("{flag} {v}: {e}"))
        };
        match flag.as_str() {
            "--rounds" => a.rounds = Some(num()? as usize),
            "--items" => a.items = num()?,
            "--pool-items" => a.pool_items = num()?,
            "--live" => a.live = num()?,
            "--flow" => a.flow = num()?,
            "--vacuum-after" => {
                let n = num()?;
                a.vacuum_after.push(n);
            }
            "--table-size" => (a.throughput, a.table_size) = (false, true),
            "--all" => (a.throughput, a.table_size) = (true, true),
            "--upkeep-off" => a.upkeep_off = true,
            "--capacity" => a.capacity = Some(num()? as usize),
            "--refill" => (a.throughput, a.refill) = (false, true),
            "--tls" => (a.throughput, a.tls) = (false, true),
            "--tx" => (a.throughput, a.tx) = (false, true),
            "--history" => (a.throughput, a.history) = (false, true),
            "--windows" => (a.throughput, a.windows) = (false, true),
            "--procs" => (a.throughput, a.procs) = (false, Some(num()? as usize)),
            "--samples" => a.samples = num()? as usize,
            "--help" | "-h" => {
                println!("{HELP}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

const HELP: &str = "pg_bench [--rounds N] [--items N] [--pool-items N] [--upkeep-off] [--capacity N]   throughput (3 rounds)
pg_bench --refill [--rounds N] [--items N]                  fresh / drained-VACUUMed-refilled rounds (30)
pg_bench --table-size [--live N] [--flow N] [--vacuum-after N]...
pg_bench --all                                               throughput, then table size
pg_bench --tls [--rounds N] [--items N] [--pool-items N]     plain text vs TLS (3 rounds)
pg_bench --tx [--samples N]                                  commit-to-start latency, push_in vs push
pg_bench --history [--rounds N] [--pool-items N]             Pool(4) with the record of finished jobs off vs on
pg_bench --procs N [--capacity N] [--rounds N] [--items N]  N worker processes (Pool(4) each), one producer: without vs with a capacity
pg_bench --windows [--rounds N] [--pool-items N]             Pool(4) with the key windows' triggers dropped vs in place
LEASEQ_PG_URL sets the server (default host=127.0.0.1 port=5432 user=postgres dbname=test)";

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The system's load average now, for the record.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// The kinds' names, in [`Kind`] order.
const NAMES: [&str; 8] = [
    "bare",
    "store",
    "fresh queue",
    "pool",
    "pool+prefetch",
    "store, no upkeep",
    "pool, prefetch 32",
    "store, capacity",
];

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

/// Items/s of one run, and the CPU time per item (µs) of this process and of the server.
async fn run_one(
    url: &str,
    kind: Kind,
    items: u64,
    capacity: Option<usize>,
) -> Result<[f64; 3], BenchError> {
    let s = STORE_SCHEMA;
    let cpu = || (process_cpu_time(), server_cpu_time());
    let before = cpu();
    let rate = match kind {
        Kind::Bare => run_bare(url, items, WORKERS, CLAIM).await?.items_per_sec,
        Kind::Store => {
            run_store(url, s, "bench-store", Options::new(), items, WORKERS, CLAIM)
                .await?
                .items_per_sec
        }
        Kind::Fresh => {
            let queue = unique("bench-fresh");
            run_store(url, s, &queue, Options::new(), items, WORKERS, CLAIM)
                .await?
                .items_per_sec
        }
        Kind::Capped => {
            let q = open_capped(url, s, "bench-capped", Options::new(), capacity).await?;
            run_store_on(q, items, WORKERS, CLAIM).await?.items_per_sec
        }
        Kind::PoolOwnPrefetch => {
            run_pool(url, s, "bench-pool-own", items, WORKERS, 0, Some(PREFETCH))
                .await?
                .items_per_sec
        }
        Kind::NoUpkeep => {
            let options = Options::new().vacuum_after_rows(0);
            run_store(
                url,
                s,
                "bench-store-no-upkeep",
                options,
                items,
                WORKERS,
                CLAIM,
            )
            .await?
            .items_per_sec
        }
        Kind::Pool => {
            run_pool(url, s, "bench-pool", items, WORKERS, 0, None)
                .await?
                .items_per_sec
        }
        Kind::PoolPrefetch => {
            run_pool(
                url,
                s,
                "bench-pool-prefetch",
                items,
                WORKERS,
                PREFETCH,
                None,
            )
            .await?
            .items_per_sec
        }
    };
    // Let the server reap the run's backends, so that their CPU time is counted.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let after = cpu();
    let per_item = |a: Option<std::time::Duration>, b: Option<std::time::Duration>| match (a, b) {
        (Some(a), Some(b)) => (b - a).as_secs_f64() * 1e6 / items as f64,
        _ => f64::NAN,
    };
    Ok([
        rate,
        per_item(before.0, after.0),
        per_item(before.1, after.1),
    ])
}

async fn throughput(url: &str, a: &Args) -> Result<(), BenchError> {
    println!(
        "throughput: {} items of 16 bytes, {WORKERS} workers, claim {CLAIM}, producer batches \
         of 256; pool: {} items, {WORKERS} workers, no-op handler; {} rounds",
        a.items,
        a.pool_items,
        a.rounds.unwrap_or(3)
    );
    let rounds = a.rounds.unwrap_or(3);
    drop_schema(url, STORE_SCHEMA).await?;
    let mut kinds = vec![Kind::Bare, Kind::Store, Kind::Fresh];
    if a.pool_items > 0 {
        kinds.push(Kind::Pool);
        kinds.push(Kind::PoolPrefetch);
        kinds.push(Kind::PoolOwnPrefetch);
    }
    if a.upkeep_off {
        kinds.push(Kind::NoUpkeep);
    }
    if a.capacity.is_some() {
        kinds.push(Kind::Capped);
    }
    let items = |k: Kind| {
        if matches!(k, Kind::Pool | Kind::PoolPrefetch | Kind::PoolOwnPrefetch) {
            a.pool_items
        } else {
            a.items
        }
    };
    // Warm-up (the store's also creates its schema); not counted.
    for &kind in &kinds {
        run_one(url, kind, (items(kind) / 10).max(1), a.capacity).await?;
    }
    // Per kind, [items/s, client µs/item, server µs/item] of each round.
    let mut got: Vec<Vec<[f64; 3]>> = vec![Vec::new(); kinds.len()];
    for round in 0..rounds {
        // Each round starts with the next kind: the order rotates.
        let mut r = vec![[f64::NAN; 3]; kinds.len()];
        for i in 0..kinds.len() {
            let k = (round + i) % kinds.len();
            r[k] = run_one(url, kinds[k], items(kinds[k]), a.capacity).await?;
        }
        println!("round {} (load {}):", round + 1, load());
        for (k, v) in r.iter().enumerate() {
            println!(
                "  {:<16} {:>7.0} items/s  {:.3}x bare  CPU per item: client {:>5.1} us, \
                 server {:>5.1} us",
                NAMES[kinds[k] as usize],
                v[0],
                v[0] / r[0][0],
                v[1],
                v[2]
            );
        }
        for (g, v) in got.iter_mut().zip(r) {
            g.push(v);
        }
    }
    println!("median of {rounds} rounds:");
    for (k, g) in got.iter().enumerate() {
        let col = |i: usize| median(g.iter().map(|v| v[i]).collect());
        let ratio = median(g.iter().zip(&got[0]).map(|(v, b)| v[0] / b[0]).collect());
        println!(
            "  {:<16} {:>7.0} items/s  {ratio:.3}x bare (median of the rounds' ratios)  \
             CPU per item: client {:>5.1} us, server {:>5.1} us",
            NAMES[kinds[k] as usize],
            col(0),
            col(1),
            col(2)
        );
    }
    Ok(())
}

async fn refill(url: &str, a: &Args) -> Result<(), BenchError> {
    let rounds = a.rounds.unwrap_or(30);
    println!(
        "refill: {rounds} rounds of {} items of 16 bytes pushed, then drained by {WORKERS} \
         workers (receive_batch({CLAIM}) + ack_batch); odd rounds a fresh queue, even ones a \
         drained queue whose table was VACUUM ANALYZEd empty, then refilled",
        a.items
    );
    drop_schema(url, STORE_SCHEMA).await?;
    let bare_before = run_bare(url, a.items, WORKERS, CLAIM).await?.items_per_sec;
    println!(
        "bare loop before: {bare_before:.0} items/s (load {})",
        load()
    );
    let got = run_refill_rounds(
        url,
        STORE_SCHEMA,
        rounds,
        a.items,
        WORKERS,
        CLAIM,
        |i, r| {
            println!(
                "round {:>2} {:<8} reltuples {:>8.0}  {:>7.0} items/s  (load {})",
                i + 1,
                format!("{:?}", r.start).to_lowercase(),
                r.reltuples,
                r.items_per_sec,
                load()
            );
        },
    )
    .await?;
    let bare_after = run_bare(url, a.items, WORKERS, CLAIM).await?.items_per_sec;
    println!("bare loop after: {bare_after:.0} items/s (load {})", load());
    for start in [None, Some(true), Some(false)] {
        let rates: Vec<f64> = got
            .iter()
            .filter(|r| start.is_none_or(|fresh| fresh == (r.start == Start::Fresh)))
            .map(|r| r.items_per_sec)
            .collect();
        let what = match start {
            None => "all rounds",
            Some(true) => "fresh",
            Some(false) => "refilled",
        };
        let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
        let med = median(rates.clone());
        println!(
            "{what:<10} ({:>2}): min {min:>7.0}  median {med:>7.0} items/s  min/median {:.3}  \
             median / bare {:.3}",
            rates.len(),
            min / med,
            med / median(vec![bare_before, bare_after])
        );
    }
    Ok(())
}

fn print_size(what: &str, t: &TableSize) {
    println!(
        "  {what}: total {:.2} MB (heap {:.2} MB, indexes {:.2} MB), {} rows, {} dead tuples, \
         {} vacuums",
        t.total as f64 / 1e6,
        t.heap as f64 / 1e6,
        t.indexes as f64 / 1e6,
        t.rows,
        t.dead_tuples,
        t.vacuums
    );
}

async fn sizes(url: &str, a: &Args) -> Result<(), BenchError> {
    println!(
        "table size: {} live items, then {} pushed and acked ({WORKERS} workers, claim \
         {CLAIM}) with about {} waiting",
        a.live, a.flow, a.live
    );
    let mut runs = vec![
        (
            Options::new(),
            "store upkeep at its defaults (VACUUM every 5,000 rows, index rebuilds)".to_string(),
        ),
        (
            Options::new().rebuild_bloated_indexes(false),
            "store VACUUM every 5,000 rows, no index rebuilds".to_string(),
        ),
        (
            Options::new().vacuum_after_rows(0),
            "store VACUUM off (vacuum_after_rows = 0)".to_string(),
        ),
    ];
    for &n in &a.vacuum_after {
        let what = format!("store VACUUM after {n} rows (vacuum_after_rows = {n})");
        runs.push((Options::new().vacuum_after_rows(n), what));
    }
    for (options, what) in runs {
        let r: SizeReport =
            table_size(url, SIZE_SCHEMA, options, a.live, a.flow, WORKERS, CLAIM).await?;
        println!(
            "{what}: flow {:.0} items/s ({:.1} s), load {}",
            r.flow.items_per_sec,
            r.flow.elapsed.as_secs_f64(),
            load()
        );
        print_size("with live items", &r.with_live);
        print_size("after the flow ", &r.after_flow);
        println!(
            "  ratio after/with live: {:.2}; the store ran {} VACUUMs and {} index rebuilds",
            r.after_flow.total as f64 / r.with_live.total as f64,
            r.upkeep.vacuums,
            r.upkeep.indexes_rebuilt
        );
        for (name, bytes, entries) in &r.indexes {
            println!(
                "  index {name}: {:.2} MB, {entries:.0} entries",
                *bytes as f64 / 1e6
            );
        }
    }
    Ok(())
}

/// `--tls`: the store and a pool, plain text and over TLS, per round and in medians.
async fn tls(url: &str, a: &Args) -> Result<(), BenchError> {
    use leaseq_bench_kit::pg_tls_bench::{run_tls_rounds, urls};
    println!("TLS: {} (load {})", urls(url).1, load());
    let rounds = run_tls_rounds(
        url,
        TLS_SCHEMA,
        a.rounds.unwrap_or(3),
        a.items,
        a.pool_items,
    );
    let rounds = rounds.await?;
    println!(
        "round | store plain | store TLS | TLS/plain | pool plain | pool TLS | TLS/plain \
         | CPU us/item plain | TLS"
    );
    let row = |label: String, r: [f64; 8]| {
        println!(
            "{label:>6} | {:>10.0} | {:>9.0} | {:>9.3} | {:>10.0} | {:>8.0} | {:>9.3} | {:>6.1} | {:>6.1}",
            r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]
        );
    };
    for (i, r) in rounds.iter().enumerate() {
        let ratios = [r[1] / r[0], r[3] / r[2]];
        row(
            i.to_string(),
            [r[0], r[1], ratios[0], r[2], r[3], ratios[1], r[4], r[5]],
        );
    }
    let m = |k: usize| median(rounds.iter().map(|r| r[k]).collect());
    let ratio = |a: usize, b: usize| median(rounds.iter().map(|r| r[a] / r[b]).collect());
    row(
        "median".into(),
        [m(0), m(1), ratio(1, 0), m(2), m(3), ratio(3, 2), m(4), m(5)],
    );
    Ok(())
}

/// `--procs N`: `N` worker processes and one producer, without and with a capacity, per
/// round and in medians.
async fn procs(url: &str, a: &Args, n: usize) -> Result<(), BenchError> {
    use leaseq_bench_kit::pg_procs_bench::run_procs;
    const SCHEMA: &str = "leaseq_bench_procs";
    drop_schema(url, SCHEMA).await?;
    let rounds = a.rounds.unwrap_or(3);
    let cap = a.capacity.unwrap_or(10_000_000);
    println!(
        "{n} worker processes (Pool(4) each), one producer, {} items a round, capacity {cap} \
         (never reached) or none, {rounds} rounds (load {})",
        a.items,
        load()
    );
    let rows = leaseq_bench_kit::pg_history_bench::alternating(rounds, |i| {
        run_procs(url, SCHEMA, n, a.items, (i == 1).then_some(cap))
    })
    .await?;
    println!(" round | no capacity | capacity | with/without");
    for (i, r) in rows.iter().enumerate() {
        println!(
            "{i:>6} | {:>11.0} | {:>8.0} | {:>6.3}",
            r[0],
            r[1],
            r[1] / r[0]
        );
    }
    let ratio = median(rows.iter().map(|r| r[1] / r[0]).collect());
    let m = |k: usize| median(rows.iter().map(|r| r[k]).collect());
    println!("median | {:>11.0} | {:>8.0} | {ratio:>6.3}", m(0), m(1));
    println!(
        "goal capacity >= 0.9 x none: {} (none lost or run twice; load {})",
        if ratio >= 0.9 { "met" } else { "NOT met" },
        load()
    );
    Ok(())
}

/// `--windows`: a pool without and with the key windows' triggers (issue 32), per round
/// and in medians.
async fn windows(url: &str, a: &Args) -> Result<(), BenchError> {
    use leaseq_bench_kit::pg_windows_bench::{run_windows_rounds, GOAL};
    const SCHEMA: &str = "leaseq_bench_windows";
    drop_schema(url, SCHEMA).await?;
    let rounds = a.rounds.unwrap_or(3);
    println!(
        "key windows' triggers: Pool(4), {} items a round, {rounds} rounds (load {})",
        a.pool_items,
        load()
    );
    let rows = run_windows_rounds(url, SCHEMA, rounds, a.pool_items).await?;
    println!(" round | without | with    | with/without");
    for (i, r) in rows.iter().enumerate() {
        println!(
            "{i:>6} | {:>7.0} | {:>7.0} | {:>6.3}",
            r[0],
            r[1],
            r[1] / r[0]
        );
    }
    let ratio = median(rows.iter().map(|r| r[1] / r[0]).collect());
    let m = |k: usize| median(rows.iter().map(|r| r[k]).collect());
    println!("median | {:>7.0} | {:>7.0} | {ratio:>6.3}", m(0), m(1));
    println!(
        "goal with >= {GOAL} x without: {} (load {})",
        if ratio >= GOAL { "met" } else { "NOT met" },
        load()
    );
    Ok(())
}

/// `--history`: a pool with the record of finished jobs off and on, per round and in medians.
async fn history(url: &str, a: &Args) -> Result<(), BenchError> {
    use leaseq_bench_kit::pg_history_bench::{run_history_rounds, GOAL};
    const SCHEMA: &str = "leaseq_bench_history";
    drop_schema(url, SCHEMA).await?;
    let rounds = a.rounds.unwrap_or(3);
    println!(
        "record of finished jobs: Pool(4), {} items a round, {rounds} rounds (load {})",
        a.pool_items,
        load()
    );
    let (rows, kept) = run_history_rounds(url, SCHEMA, rounds, a.pool_items).await?;
    println!(" round | retention off | retention on | on/off");
    for (i, r) in rows.iter().enumerate() {
        println!(
            "{i:>6} | {:>13.0} | {:>12.0} | {:>6.3}",
            r[0],
            r[1],
            r[1] / r[0]
        );
    }
    let m = |k: usize| median(rows.iter().map(|r| r[k]).collect());
    let ratio = median(rows.iter().map(|r| r[1] / r[0]).collect());
    println!("median | {:>13.0} | {:>12.0} | {ratio:>6.3}", m(0), m(1));
    let want = a.pool_items / 10 + a.pool_items * rounds as u64;
    println!(
        "goal on >= {GOAL} x off: {} ({kept} entries kept of {want} items handled with it on; load {})",
        if ratio >= GOAL { "met" } else { "NOT met" },
        load()
    );
    if kept != want {
        return Err(format!("the record kept {kept} entries, not {want}").into());
    }
    Ok(())
}

/// `--tx`: commit-to-start latency of a transactional push and of a plain one.
async fn tx(url: &str, a: &Args) -> Result<(), BenchError> {
    use leaseq_bench_kit::latency::quantile;
    use leaseq_bench_kit::pg_tx_bench::run_tx_latency;
    println!(
        "transactional push: {} samples of each, alternating, one idle worker in another open \
         (load {})",
        a.samples,
        load()
    );
    let r = run_tx_latency(url, STORE_SCHEMA, a.samples).await?;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    for (what, v) in [("push_in + COMMIT", &r.tx), ("push().await", &r.plain)] {
        println!(
            "  {what:<17} p50 {:>6.2} ms  p90 {:>6.2} ms  p99 {:>6.2} ms  max {:>6.2} ms",
            ms(quantile(v, 0.5)),
            ms(quantile(v, 0.9)),
            ms(quantile(v, 0.99)),
            ms(quantile(v, 1.0))
        );
    }
    println!(
        "  p50 ratio push_in / push: {:.2} (load {})",
        ms(quantile(&r.tx, 0.5)) / ms(quantile(&r.plain, 0.5)),
        load()
    );
    Ok(())
}

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
