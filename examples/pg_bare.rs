//! The bare SKIP LOCKED baseline on PostgreSQL: 3 runs of 100k items, 4 workers claiming 16
//! at a time and acking each batch in one statement (see `leaseq_bench_kit::pg_bare`).
//!
//! ```text
//! LEASEQ_PG_URL='host=127.0.0.1 port=5432 user=postgres dbname=test' \
//!     cargo run --release --features postgres --example pg_bare [items] [runs]
//! ```
//!
//! Uses (and truncates) the table `leaseq_bench.bare_items`. The figures are only worth
//! comparing with another measured in the same session on the same machine.

use std::process::ExitCode;

use leaseq_bench_kit::pg_bare::run_bare;

/// The server used when `LEASEQ_PG_URL` is not set.
const DEFAULT_URL: &str = "host=127.0.0.1 port=5432 user=postgres dbname=test";

#[tokio::main]
async fn main() -> ExitCode {
    let url = std::env::var("LEASEQ_PG_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned());
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>());
    let items = args.next().unwrap_or(Ok(100_000)).expect("items: a number");
    let runs = args.next().unwrap_or(Ok(3)).expect("runs: a number");
    let (workers, claim) = (4, 16);
    println!("bare SKIP LOCKED loop: {items} items, {workers} workers, claim {claim}, batched ack");
    for run in 1..=runs {
        match run_bare(&url, items, workers, claim).await {
            Ok(r) => println!(
                "run {run}: {:>9.0} items/s  ({:.3} s)",
                r.items_per_sec,
                r.elapsed.as_secs_f64()
            ),
            Err(e) => {
                eprintln!("run {run}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
