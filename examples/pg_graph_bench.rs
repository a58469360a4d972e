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
    run_fanout_rounds, run_plain_rounds, Phases, FANOUT_GOAL, PLAIN_GOAL,
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

/// Each round's split, ms from the first push: pushed, first job, `n`-th job (the last
/// child), last job (the callback); then the medians of each column.
fn print_phases(runs: &[[Phases; 2]]) {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    let cols = |p: &Phases| [ms(p.pushed), ms(p.first), ms(p.children), ms(p.total)];
    println!(
        " round | independent ms: pushed  first  n-th   last | fan-out ms: pushed  first  n-th   last"
    );
    for (i, r) in runs.iter().enumerate() {
        let [a, b] = [cols(&r[0]), cols(&r[1])];
        println!(
            "{i:>6} | {:>22.0} {:>6.0} {:>5.0} {:>6.0} | {:>18.0} {:>6.0} {:>5.0} {:>6.0}",
            a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]
        );
    }
    let median = |side: usize, col: usize| {
        let mut v: Vec<f64> = runs.iter().map(|r| cols(&r[side])[col]).collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    println!(
        "median | {:>22.0} {:>6.0} {:>5.0} {:>6.0} | {:>18.0} {:>6.0} {:>5.0} {:>6.0}",
        median(0, 0),
        median(0, 1),
        median(0, 2),
        median(0, 3),
        median(1, 0),
        median(1, 1),
        median(1, 2),
        median(1, 3)
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
        let runs = run_fanout_rounds(url, "leaseq_bench_graph_fanout", rounds, n).await?;
        let rows: Vec<[f64; 2]> = runs.iter().map(|r| [r[0].rate(n), r[1].rate(n)]).collect();
        print(["independent/s", "fan-out/s"], &rows, FANOUT_GOAL);
        print_phases(&runs);
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
