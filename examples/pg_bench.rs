//! Issue 10's benchmark: the leaseq-postgres store beside the bare SKIP LOCKED loop, in one
//! run, on the same server.
//!
//! ```text
//! LEASEQ_PG_URL='host=127.0.0.1 port=5432 user=postgres dbname=test' \
//!     cargo run --release --features postgres --example pg_bench -- [options]
//! ```
//!
//! **Throughput** (the default): a discarded warm-up round (a tenth of the items), then
//! `--rounds` rounds (3), each running, in an order that alternates from round to round:
//! the bare loop (`leaseq_suite::pg_bare`, 4 workers, claim 16, batched ack); the store end
//! to end (`leaseq_suite::pg_store_bench::run_store`: 4 workers `receive_batch(16)` +
//! `ack_batch`, a producer `push_batch`ing 256 at a time); and a `PgPool` of 4 workers with
//! a no-op handler (`--pool-items`, 0 to skip). The bare loop and the store get the same
//! `--items` (100,000) of 16 bytes. Prints items/s per round, the ratio store/bare within
//! each round, and the medians.
//!
//! **Table size** (`--table-size`): `pg_total_relation_size` of the store's items table in a
//! fresh schema with `--live` items waiting (10,000), then after `--flow` more items
//! (1,000,000) were pushed and acked while about `--live` stayed waiting; once with the
//! store's periodic VACUUM (`vacuum_after_rows` 50,000, the default) and once without it.
//! `--all` runs both parts.
//!
//! Uses the schemas `leaseq_bench` (the bare loop's table), `leaseq_bench_store`,
//! `leaseq_bench_size` and `leaseq_bench_size_novac`, dropping and recreating the last three.
//! Absolute figures are the machine's; compare within one run.

use std::process::ExitCode;

use leaseq_postgres::Options;
use leaseq_suite::pg_bare::run_bare;
use leaseq_suite::pg_store_bench::{
    drop_schema, run_pool, run_store, table_size, BenchError, SizeReport, TableSize,
};

/// The server used when `LEASEQ_PG_URL` is not set.
const DEFAULT_URL: &str = "host=127.0.0.1 port=5432 user=postgres dbname=test";
const STORE_SCHEMA: &str = "leaseq_bench_store";
const WORKERS: usize = 4;
const CLAIM: usize = 16;

struct Args {
    rounds: usize,
    items: u64,
    pool_items: u64,
    throughput: bool,
    table_size: bool,
    live: u64,
    flow: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        rounds: 3,
        items: 100_000,
        pool_items: 20_000,
        throughput: true,
        table_size: false,
        live: 10_000,
        flow: 1_000_000,
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
            "--rounds" => a.rounds = num()? as usize,
            "--items" => a.items = num()?,
            "--pool-items" => a.pool_items = num()?,
            "--live" => a.live = num()?,
            "--flow" => a.flow = num()?,
            "--table-size" => (a.throughput, a.table_size) = (false, true),
            "--all" => (a.throughput, a.table_size) = (true, true),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

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

#[derive(Clone, Copy)]
enum Kind {
    Bare,
    Store,
    Pool,
}

async fn run_one(url: &str, kind: Kind, items: u64) -> Result<f64, BenchError> {
    Ok(match kind {
        Kind::Bare => run_bare(url, items, WORKERS, CLAIM).await?.items_per_sec,
        Kind::Store => {
            run_store(url, STORE_SCHEMA, items, WORKERS, CLAIM)
                .await?
                .items_per_sec
        }
        Kind::Pool => {
            run_pool(url, STORE_SCHEMA, items, WORKERS)
                .await?
                .items_per_sec
        }
    })
}

async fn throughput(url: &str, a: &Args) -> Result<(), BenchError> {
    println!(
        "throughput: {} items of 16 bytes, {WORKERS} workers, claim {CLAIM}, producer batches \
         of 256; pool: {} items, {WORKERS} workers, no-op handler; {} rounds",
        a.items, a.pool_items, a.rounds
    );
    drop_schema(url, STORE_SCHEMA).await?;
    let with_pool = a.pool_items > 0;
    // Warm-up (the store's first round also creates its schema); not counted.
    for kind in [Kind::Bare, Kind::Store] {
        run_one(url, kind, (a.items / 10).max(1)).await?;
    }
    let (mut bare, mut store, mut pool, mut ratio) = (vec![], vec![], vec![], vec![]);
    for round in 1..=a.rounds {
        let mut order = vec![Kind::Bare, Kind::Store];
        if round % 2 == 0 {
            order.reverse();
        }
        if with_pool {
            order.insert(round % 3, Kind::Pool);
        }
        let (mut b, mut s, mut p) = (f64::NAN, f64::NAN, f64::NAN);
        for kind in order {
            match kind {
                Kind::Bare => b = run_one(url, kind, a.items).await?,
                Kind::Store => s = run_one(url, kind, a.items).await?,
                Kind::Pool => p = run_one(url, kind, a.pool_items).await?,
            }
        }
        println!(
            "round {round}: bare {b:>8.0} items/s  store {s:>8.0} items/s  ratio {:.3}  \
             pool {p:>8.0} items/s  (load {})",
            s / b,
            load()
        );
        bare.push(b);
        store.push(s);
        pool.push(p);
        ratio.push(s / b);
    }
    println!(
        "median: bare {:.0} items/s  store {:.0} items/s  ratio store/bare {:.3}  pool {:.0} \
         items/s  pool/bare {:.3}",
        median(bare.clone()),
        median(store),
        median(ratio),
        median(pool.clone()),
        median(pool) / median(bare)
    );
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
    let runs = [
        (
            "leaseq_bench_size",
            Options::new(),
            "store VACUUM after 50,000 rows (default)",
        ),
        (
            "leaseq_bench_size_novac",
            Options::new().vacuum_after_rows(0),
            "store VACUUM off (vacuum_after_rows = 0)",
        ),
    ];
    for (schema, options, what) in runs {
        let r: SizeReport =
            table_size(url, schema, options, a.live, a.flow, WORKERS, CLAIM).await?;
        println!(
            "{what}: flow {:.0} items/s ({:.1} s), load {}",
            r.flow.items_per_sec,
            r.flow.elapsed.as_secs_f64(),
            load()
        );
        print_size("with live items", &r.with_live);
        print_size("after the flow ", &r.after_flow);
        println!(
            "  ratio after/with live: {:.2}",
            r.after_flow.total as f64 / r.with_live.total as f64
        );
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let url = std::env::var("LEASEQ_PG_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned());
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
    if r.is_ok() && a.table_size {
        r = sizes(&url, &a).await;
    }
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
