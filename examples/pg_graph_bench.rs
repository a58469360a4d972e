//! Issue 33's costs on Postgres: jobs without dependencies beside a table without the
//! graph's triggers, and a fan-out of 10,000 children into one callback beside 10,000
//! independent jobs, each pair in the same run (`leaseq_bench_kit::pg_graph_bench`).
//!
//! ```text
//! LEASEQ_PG_URL='host=127.0.0.1 port=5432 user=postgres dbname=test' \
//!     cargo run --release --features postgres --example pg_graph_bench -- [--rounds N] [--items N] [--children N] [--only plain|fanout]
//! ```
//!
//! Prints each round's rates and ratio, then the medians of the per-round ratios against
//! the goals (plain: with / without >= 0.95; fan-out >= 0.7 x independent). Uses the
//! schemas `leaseq_bench_graph_off`, `leaseq_bench_graph_on` and `leaseq_bench_graph_fanout`
//! (dropped first).

use std::process::ExitCode;

use leaseq_bench_kit::pg_graph_bench::{
    run_fanout_rounds, run_plain_rounds, FANOUT_GOAL, PLAIN_GOAL,
};
use leaseq_bench_kit::pg_store_bench::BenchError;

const DEFAULT_URL: &str = "host=127.0.0.1 port=5432 user=postgres dbname=test";

/// The middle of the per-round ratios.
fn median_ratio(rows: &[[f64; 2]]) -> f64 {
    let mut v: Vec<f64> = rows.iter().map(|r| r[1] / r[0]).collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn print(title: [&str; 2], rows: &[[f64; 2]], goal: f64) {
    println!(" round | {:>14} | {:>14} | ratio", title[0], title[1]);
    for (i, r) in rows.iter().enumerate() {
        println!(
            "{i:>6} | {:>14.0} | {:>14.0} | {:.3}",
            r[0],
            r[1],
            r[1] / r[0]
        );
    }
    let ratio = median_ratio(rows);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "median ratio {ratio:.3}, goal >= {goal}: {} (load {})",
        if ratio >= goal { "met" } else { "NOT met" },
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
}

async fn run(url: &str, args: &[String]) -> Result<(), BenchError> {
    let value = |flag: &str, default: u64| -> Result<u64, BenchError> {
        match args.iter().position(|a| a == flag) {
            Some(i) => Ok(args.get(i + 1).ok_or("a number after the flag")?.parse()?),
            None => Ok(default),
        }
    };
    let rounds = value("--rounds", 5)? as usize;
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1));
    if only.is_none_or(|o| o == "plain") {
        let items = value("--items", 20_000)?;
        println!("jobs without dependencies: Pool(4), {items} items a round, {rounds} rounds");
        let rows = run_plain_rounds(url, "leaseq_bench_graph", rounds, items).await?;
        print(["no triggers", "step 10"], &rows, PLAIN_GOAL);
    }
    if only.is_none_or(|o| o == "fanout") {
        let n = value("--children", 10_000)?;
        println!("fan-out: Pool(4), {n} jobs a round, {rounds} rounds");
        let rows = run_fanout_rounds(url, "leaseq_bench_graph_fanout", rounds, n).await?;
        print(["independent/s", "fan-out/s"], &rows, FANOUT_GOAL);
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let url = std::env::var("LEASEQ_PG_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned());
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&url, &args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
