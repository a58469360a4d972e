//! Issue 31's benchmark of the dashboard's cost: a Postgres pool at full speed with and
//! without `leaseq-web` polling its queue (`leaseq_bench_kit::pg_dashboard_bench`).
//!
//! ```text
//! LEASEQ_PG_URL='host=127.0.0.1 port=5432 user=postgres dbname=test' \
//!     cargo run --release --features web --example pg_dashboard_bench -- [ROUNDS [ITEMS]]
//! ```
//!
//! `ROUNDS` rounds (5) of a `PgPool` of 4 workers handling `ITEMS` items (60,000) on one
//! queue, in each round without a dashboard, with one polled every second (the queue's
//! page, the overview, `/metrics`: a browser left open there and a scraper) and polled
//! ten times a second, in an order that rotates, after a discarded warm-up of each. Prints
//! each round's items/s and the ratios to the run without, then the medians, against the
//! goal (with >= 0.95 x without), and the CPU time per item of this process and of the
//! server's processes (a measure the machine's other load disturbs less than items/s). Uses the schema `leaseq_bench_dashboard` (dropped first).

use std::process::ExitCode;

use leaseq_bench_kit::pg_dashboard_bench::{run_dashboard_rounds, GOAL};
use leaseq_bench_kit::pg_store_bench::{drop_schema, BenchError};

const SCHEMA: &str = "leaseq_bench_dashboard";

/// The median of `v` (NaN for none).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The system's load average now, for the record.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

async fn run(url: &str, rounds: usize, items: u64) -> Result<(), BenchError> {
    drop_schema(url, SCHEMA).await?;
    println!(
        "dashboard cost: Pool(4), {items} items a round, {rounds} rounds (load {})",
        load()
    );
    let rows = run_dashboard_rounds(url, SCHEMA, rounds, items).await?;
    println!(
        " round |    without |  polled 1/s | ratio |  polled 10/s | ratio | polls | slowest poll"
    );
    for (i, r) in rows.iter().enumerate() {
        let [off, slow, fast] = r.items_per_sec;
        println!(
            "{i:>6} | {off:>10.0} | {slow:>11.0} | {:>5.3} | {fast:>12.0} | {:>5.3} | {}/{} | {:.0}/{:.0} ms",
            slow / off,
            fast / off,
            r.polls[1],
            r.polls[2],
            r.slowest_poll[1].as_secs_f64() * 1e3,
            r.slowest_poll[2].as_secs_f64() * 1e3,
        );
    }
    let m = |k: usize| median(rows.iter().map(|r| r.items_per_sec[k]).collect());
    let ratio = |k: usize| {
        median(
            rows.iter()
                .map(|r| r.items_per_sec[k] / r.items_per_sec[0])
                .collect(),
        )
    };
    println!(
        "median | {:>10.0} | {:>11.0} | {:>5.3} | {:>12.0} | {:>5.3} |",
        m(0),
        m(1),
        ratio(1),
        m(2),
        ratio(2)
    );
    let us = |d: std::time::Duration| d.as_secs_f64() * 1e6;
    let cpu = |k: usize| {
        (
            median(rows.iter().map(|r| us(r.process_cpu_per_item[k])).collect()),
            median(rows.iter().map(|r| us(r.server_cpu_per_item[k])).collect()),
        )
    };
    let (off, slow, fast) = (cpu(0), cpu(1), cpu(2));
    println!(
        "CPU per item, median (this process / every postgres process): without {:.1} / {:.1} us, \
         polled 1/s {:.1} / {:.1} us, polled 10/s {:.1} / {:.1} us",
        off.0, off.1, slow.0, slow.1, fast.0, fast.1
    );
    let verdict = |r: f64| if r >= GOAL { "met" } else { "NOT met" };
    println!(
        "goal with >= {GOAL} x without: polled 1/s {}, polled 10/s {} (load {})",
        verdict(ratio(1)),
        verdict(ratio(2)),
        load()
    );
    drop_schema(url, SCHEMA).await
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let rounds = args.next().map_or(Ok(5), |s| s.parse::<usize>());
    let items = args.next().map_or(Ok(60_000), |s| s.parse::<u64>());
    let (Ok(rounds), Ok(items)) = (rounds, items) else {
        eprintln!("usage: pg_dashboard_bench [ROUNDS [ITEMS]]");
        return ExitCode::FAILURE;
    };
    let url = std::env::var("LEASEQ_PG_URL")
        .unwrap_or_else(|_| "host=127.0.0.1 port=5432 user=postgres dbname=test".into());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match rt.block_on(run(&url, rounds, items)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pg_dashboard_bench: {e}");
            ExitCode::FAILURE
        }
    }
}
