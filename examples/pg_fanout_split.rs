//! Where a fan-out of 10,000 children into one callback pays more than 10,000 independent
//! jobs, per item, on Postgres (issue 33; `leaseq_bench_kit::pg_fanout_split`): each run
//! split at the push's return, with the client's and the database's backends' CPU, the WAL
//! written and synced (cluster-wide) and the database's commits.
//!
//! ```text
//! LEASEQ_PG_URL='host=127.0.0.1 port=5432 user=postgres dbname=DB' \
//!     cargo run --release --features postgres --example pg_fanout_split -- DB [ROUNDS] [N]
//! ```
//!
//! DB is the database's name (its backends are found by it). Uses the schema
//! `leaseq_bench_split` (dropped first); rounds alternate which side goes first.

use std::process::ExitCode;

use leaseq_bench_kit::pg_fanout_split::{split_run, Phase, Split};
use leaseq_bench_kit::pg_store_bench::{drop_schema, BenchError};

fn line(side: &str, n: u64, s: &Split) {
    let us = |d: std::time::Duration| d.as_secs_f64() * 1e6 / n as f64;
    let ph = |p: &Phase| {
        format!(
            "{:>6.0} ms  client {:>5.1}  server {:>5.1} us/item  wal {:>4.0} B/item  writes {:>5} syncs {:>5}",
            p.wall.as_secs_f64() * 1e3,
            us(p.client),
            us(p.server),
            p.wal_bytes as f64 / n as f64,
            p.wal_writes,
            p.wal_syncs
        )
    };
    println!("{side:>11} push  {}", ph(&s.push));
    println!(
        "{side:>11} drain {}  commits/item {:.3}",
        ph(&s.drain),
        s.commits as f64 / n as f64
    );
}

async fn run(url: &str, args: &[String]) -> Result<(), BenchError> {
    let db = args.first().ok_or("the database's name first")?;
    let rounds: usize = args.get(1).map_or(Ok(3), |s| s.parse())?;
    let n: u64 = args.get(2).map_or(Ok(10_000), |s| s.parse())?;
    let schema = "leaseq_bench_split";
    drop_schema(url, schema).await?;
    split_run(url, db, schema, n / 10, false).await?;
    split_run(url, db, schema, n / 10, true).await?;
    for round in 0..rounds {
        let order = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for fanout in order {
            let s = split_run(url, db, schema, n, fanout).await?;
            line(if fanout { "fan-out" } else { "independent" }, n, &s);
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let Ok(url) = std::env::var("LEASEQ_PG_URL") else {
        eprintln!("error: set LEASEQ_PG_URL");
        return ExitCode::FAILURE;
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&url, &args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
