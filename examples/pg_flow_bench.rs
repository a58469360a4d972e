//! Issue 32's benchmark of flow control on Postgres (`leaseq_bench_kit::pg_flow_bench`).
//!
//! ```text
//! LEASEQ_PG_URL='host=127.0.0.1 port=5432 user=postgres dbname=test' \
//!     cargo run --release --features postgres --example pg_flow_bench -- [ROUNDS [ITEMS [PER]]]
//! ```
//!
//! `ROUNDS` rounds (3) of a backlog of `ITEMS` items (100,000) drained by `PgPool`s of 4:
//! plain; two stores on one queue without and with a queue limit of 64 (goal: >= 0.8 x);
//! the backlog in ordered groups of `PER` items (100: 1,000 groups; goal: >= 0.5 x plain).
//! Prints each round's items/s, then the medians and the ratios against the goals. Uses
//! the schema `leaseq_bench_flow` (dropped first).

use std::process::ExitCode;

use leaseq_bench_kit::pg_flow_bench::{run_flow_rounds, GOALS, SETTINGS};
use leaseq_bench_kit::pg_store_bench::{drop_schema, BenchError};

const SCHEMA: &str = "leaseq_bench_flow";

/// The median of `v` (NaN for none).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

async fn run(url: &str, rounds: usize, items: u64, per: u64) -> Result<(), BenchError> {
    drop_schema(url, SCHEMA).await?;
    println!("flow control: PgPool(4) per store, a backlog of {items} items, {rounds} rounds");
    let rows = run_flow_rounds(url, SCHEMA, rounds, items, per).await?;
    println!(" round | {}", SETTINGS.join(" | "));
    for (i, r) in rows.iter().enumerate() {
        let cells: Vec<String> = r.iter().map(|v| format!("{v:.0}")).collect();
        println!("{i:>6} | {}", cells.join(" | "));
    }
    let med: Vec<f64> = (0..SETTINGS.len())
        .map(|s| median(rows.iter().map(|r| r[s]).collect()))
        .collect();
    println!(
        "median | {}",
        med.iter()
            .map(|v| format!("{v:.0}"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let limit = median(rows.iter().map(|r| r[2] / r[1]).collect());
    let groups = median(rows.iter().map(|r| r[3] / r[0]).collect());
    println!(
        "limit 64 / two stores: {limit:.3} (goal >= {}: {})",
        GOALS[0],
        if limit >= GOALS[0] { "MET" } else { "MISSED" }
    );
    println!(
        "groups of {per} / plain: {groups:.3} (goal >= {}: {})",
        GOALS[1],
        if groups >= GOALS[1] { "MET" } else { "MISSED" }
    );
    drop_schema(url, SCHEMA).await
}

fn main() -> ExitCode {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let rounds = args.first().copied().unwrap_or(3) as usize;
    let items = args.get(1).copied().unwrap_or(100_000);
    let per = args.get(2).copied().unwrap_or(100).max(1);
    let url = std::env::var("LEASEQ_PG_URL")
        .unwrap_or_else(|_| "host=127.0.0.1 port=5432 user=postgres dbname=test".into());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    match rt.block_on(run(&url, rounds, items, per)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pg_flow_bench: {e}");
            ExitCode::FAILURE
        }
    }
}
