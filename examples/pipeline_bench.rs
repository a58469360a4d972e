//! Issue 17's goals measured side by side in one run (`leaseq_bench_kit::pipeline`):
//!
//! ```text
//! LEASEQ_PG_URL='host=127.0.0.1 port=5432 user=postgres dbname=test' \
//!     cargo run --release --features sqlite,postgres,brokers --example pipeline_bench -- [options]
//! ```
//!
//! Sections (all by default; `--only a,b` picks some):
//!
//! - `memory`: a `Pool` of 4 workers with a no-op handler beside flume with 4 consumers
//!   awaiting the same no-op (`leaseq_bench_kit::throughput`), a warm-up round then at least 5
//!   rounds;
//! - `sqlite` (PowerLoss and ProcessCrash) and `postgres`: `Pool(4)` (its default prefetch,
//!   and a prefetch of 32), one at a time with the awaited ack, one at a time with
//!   `ack_nowait` (from `receive()`, and from `consumer(32)`, which leases ahead),
//!   `receive_batch(16)` + `ack_batch`, and on Postgres the bare SKIP LOCKED loop
//!   (`leaseq_bench_kit::pg_bare`), each round in a rotated order, each run on a fresh queue;
//! - `brokers` (feature `brokers`): NATS JetStream and RabbitMQ, skipped loudly when a
//!   server is not reachable;
//! - `curve`: a `Pool` whose handler sleeps 1 ms, 1 to 64 workers, SQLite (PowerLoss) and
//!   Postgres, beside flume consumers running the same handler;
//! - `latency`: push -> handler start at 100 items/s on memory, SQLite and Postgres.
//!
//! Options: `--items N` (100,000; the one-at-a-time rows without a prefetch take a fifth,
//! the memory rows at least 100,000), `--rounds R` (3), `--curve-secs S` (1.0: each curve
//! point gets about S seconds of its ideal rate), `--latency-secs S` (5), `--quick` (a smoke
//! run: 5,000 items, 1 round, short curve and latency). Prints markdown tables, then the
//! issue's goals, met or missed.

use std::time::Duration;

use leaseq_bench_kit::pg_bare;
use leaseq_bench_kit::pg_store_bench::drop_schema;
use leaseq_bench_kit::pipeline::print::Results;
use leaseq_bench_kit::pipeline::runs::{run, Consumer, Outcome, NOWAIT};
use leaseq_bench_kit::pipeline::stores::{fresh_name, open_pg, pg_durability, SqliteFile};
use leaseq_bench_kit::pipeline::{curve, low_load, rate, BenchError, CONSUMERS};
use leaseq_bench_kit::throughput;
use leaseq_sqlite::Durability;
use leaseq_tokio::{TokioClock, TokioRuntime};
use tokio::runtime::Runtime as Tokio;

const DEFAULT_URL: &str = "host=127.0.0.1 port=5432 user=postgres dbname=test";
const SECTIONS: [&str; 6] = [
    "memory", "sqlite", "postgres", "brokers", "curve", "latency",
];

struct Args {
    quick: bool,
    items: u64,
    rounds: usize,
    curve_secs: f64,
    latency_secs: u64,
    only: Vec<String>,
    url: String,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        quick: false,
        items: 100_000,
        rounds: 3,
        curve_secs: 1.0,
        latency_secs: 5,
        only: SECTIONS.iter().map(|s| s.to_string()).collect(),
        url: std::env::var("LEASEQ_PG_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned()),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().ok_or(format!("{flag} needs a value"));
        let bad = |e: &dyn std::fmt::Display| format!("{flag}: {e}");
        match flag.as_str() {
            "--items" => a.items = val()?.replace('_', "").parse().map_err(|e| bad(&e))?,
            "--rounds" => a.rounds = val()?.parse().map_err(|e| bad(&e))?,
            "--curve-secs" => a.curve_secs = val()?.parse().map_err(|e| bad(&e))?,
            "--latency-secs" => a.latency_secs = val()?.parse().map_err(|e| bad(&e))?,
            "--only" => {
                a.only = val()?.split(',').map(str::to_owned).collect();
                if let Some(s) = a.only.iter().find(|s| !SECTIONS.contains(&s.as_str())) {
                    return Err(format!("--only: no section {s} (one of {SECTIONS:?})"));
                }
            }
            "--quick" => {
                (a.items, a.rounds, a.curve_secs, a.latency_secs) = (5_000, 1, 0.1, 1);
                a.quick = true;
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    a.rounds = a.rounds.max(1);
    Ok(a)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(|_| "?".into(), |s| s.trim().into())
}

fn memory(tokio: &Tokio, a: &Args, r: &mut Results) {
    let rt = TokioRuntime::with_clock(tokio.handle().clone(), TokioClock::Tsc);
    let rounds = a.rounds.max(5);
    // At least 100,000 items (a flume round of fewer is too short to time) unless --quick.
    let n = if a.quick {
        a.items
    } else {
        a.items.max(100_000)
    };
    for round in 0..=rounds {
        // Round 0 is a warm-up, discarded.
        let flume = tokio.block_on(throughput::flume_handler(rt.clone(), n, CONSUMERS));
        let pool = tokio.block_on(throughput::pool(rt.clone(), n, CONSUMERS));
        if round > 0 {
            r.samples.add("mem.flume", round, rate(n, flume));
            r.samples.add("mem.pool", round, rate(n, pool));
        }
    }
}

/// The leaseq rows of a store, in an order rotated each round.
const KINDS: [(&str, Consumer); 6] = [
    ("pool", Consumer::Pool),
    ("pool32", Consumer::PoolPrefetch(32)),
    ("single", Consumer::Single),
    ("nowait", Consumer::SingleNowait),
    ("prefetch", Consumer::Prefetch(32)),
    ("batch", Consumer::Batch(16)),
];

/// Items for a row: the one-at-a-time rows without a prefetch are the slow baselines, and
/// take a fifth.
fn items_for(a: &Args, how: Consumer) -> u64 {
    if matches!(how, Consumer::Single | Consumer::SingleNowait) {
        (a.items / 5).max(1)
    } else {
        a.items
    }
}

/// [`pg_bare::run_bare_in`] with owned arguments, for a task of its own.
async fn run_bare_in(
    url: String,
    schema: String,
    items: u64,
    workers: usize,
    claim: usize,
) -> Result<pg_bare::BareReport, tokio_postgres::Error> {
    pg_bare::run_bare_in(&url, &schema, items, workers, claim).await
}

fn sqlite(tokio: &Tokio, a: &Args, r: &mut Results) {
    let rt = TokioRuntime::with_clock(tokio.handle().clone(), TokioClock::Tsc);
    for (tag, d) in [
        ("pl", Durability::PowerLoss),
        ("pc", Durability::ProcessCrash),
    ] {
        for round in 0..a.rounds {
            for k in 0..KINDS.len() {
                let (name, how) = KINDS[(k + round) % KINDS.len()];
                let key = format!("sql.{tag}.{name}");
                if matches!(how, Consumer::SingleNowait | Consumer::Prefetch(_)) && !NOWAIT {
                    r.missing.insert(key, "n/a (no ack_nowait)".into());
                    continue;
                }
                let n = items_for(a, how);
                let file = SqliteFile::new();
                let took = tokio.block_on(async {
                    let q = file.open(d, rt.clone())?;
                    run(q, n, how).await
                });
                r.record(&key, round, n, took);
            }
        }
    }
}

fn postgres(tokio: &Tokio, a: &Args, r: &mut Results) {
    let schema = fresh_name("leaseq_pipeline");
    r.pg_durability = tokio
        .block_on(pg_durability(&a.url))
        .unwrap_or_else(|e| format!("? ({e})"));
    for round in 0..a.rounds {
        for k in 0..=KINDS.len() {
            let pick = (k + round) % (KINDS.len() + 1);
            let Some(&(name, how)) = KINDS.get(pick) else {
                // On a task of its own: its checks panic.
                let bare = run_bare_in(a.url.clone(), schema.clone(), a.items, CONSUMERS, 16);
                let took = match tokio.block_on(tokio.spawn(bare)) {
                    Ok(Ok(b)) => Ok(Outcome {
                        took: b.elapsed,
                        again: 0,
                    }),
                    Ok(Err(e)) => Err(e.into()),
                    Err(e) => Err(format!("the bare loop panicked: {e}").into()),
                };
                r.record("pg.bare", round, a.items, took);
                continue;
            };
            let key = format!("pg.{name}");
            if matches!(how, Consumer::SingleNowait | Consumer::Prefetch(_)) && !NOWAIT {
                r.missing.insert(key, "n/a (no ack_nowait)".into());
                continue;
            }
            let n = items_for(a, how);
            let took = tokio.block_on(async { run(open_pg(&a.url, &schema).await?, n, how).await });
            r.record(&key, round, n, took);
        }
    }
    if let Err(e) = tokio.block_on(drop_schema(&a.url, &schema)) {
        eprintln!("could not drop schema {schema}: {e}");
    }
}

#[cfg(feature = "brokers")]
fn brokers(tokio: &Tokio, a: &Args, r: &mut Results) {
    use leaseq_bench_kit::pipeline::{nats, rabbit, reachable};
    for round in 0..a.rounds {
        if reachable(nats::ADDR) {
            let took = tokio.block_on(nats::run(a.items));
            let took = took.map(|took| Outcome { took, again: 0 });
            r.record("nats", round, a.items, took);
        } else {
            println!("SKIPPED: NATS JetStream not reachable at {}", nats::ADDR);
            r.missing
                .insert("nats".into(), "SKIPPED (not reachable)".into());
        }
        if reachable(rabbit::ADDR) {
            let took = tokio.block_on(rabbit::run(a.items));
            let took = took.map(|took| Outcome { took, again: 0 });
            r.record("rabbit", round, a.items, took);
        } else {
            println!("SKIPPED: RabbitMQ not reachable at {}", rabbit::ADDR);
            r.missing
                .insert("rabbit".into(), "SKIPPED (not reachable)".into());
        }
    }
}

#[cfg(not(feature = "brokers"))]
fn brokers(_: &Tokio, _: &Args, r: &mut Results) {
    println!("SKIPPED: NATS JetStream and RabbitMQ: built without the `brokers` feature");
    for key in ["nats", "rabbit"] {
        r.missing
            .insert(key.into(), "SKIPPED (no `brokers` feature)".into());
    }
}

fn curve(tokio: &Tokio, a: &Args, r: &mut Results) {
    let rt = TokioRuntime::with_clock(tokio.handle().clone(), TokioClock::Tsc);
    let schema = fresh_name("leaseq_pipeline_curve");
    for w in curve::WORKERS {
        let n = curve::items_for(w, a.curve_secs);
        let flume = tokio.block_on(curve::flume_sleeping(n, w));
        r.curve.push(("flume", w, rate(n, flume)));
        let file = SqliteFile::new();
        let sqlite = tokio.block_on(async {
            let q = file.open(Durability::PowerLoss, rt.clone())?;
            curve::pool_sleeping(q, n, w).await
        });
        let pg = tokio
            .block_on(async { curve::pool_sleeping(open_pg(&a.url, &schema).await?, n, w).await });
        for (store, took) in [("sqlite", sqlite), ("pg", pg)] {
            match took {
                Ok(o) => {
                    r.curve.push((store, w, rate(n, o.took)));
                    r.note_again(&format!("curve {store} {w} workers"), 0, o.again);
                }
                Err(e) => eprintln!("FAILED: curve {store} at {w} workers: {e}"),
            }
        }
    }
    let _ = tokio.block_on(drop_schema(&a.url, &schema));
}

fn latency(tokio: &Tokio, a: &Args, r: &mut Results) {
    const PER_SEC: u32 = 100;
    let samples = PER_SEC as u64 * a.latency_secs;
    let rt = TokioRuntime::with_clock(tokio.handle().clone(), TokioClock::Tsc);
    let schema = fresh_name("leaseq_pipeline_latency");
    let mut runs: Vec<(&'static str, Result<Vec<Duration>, BenchError>)> = Vec::new();
    let memory = leaseq_async::LeaseQueue::<Vec<u8>, _>::with_runtime(
        rt.clone(),
        leaseq_async::Config::new(Duration::from_secs(30)),
    );
    runs.push((
        "memory",
        match memory {
            Ok(q) => tokio.block_on(low_load::latencies(q, PER_SEC, samples)),
            Err(e) => Err(format!("{e:?}").into()),
        },
    ));
    for (what, d) in [
        ("leaseq-sqlite PowerLoss", Durability::PowerLoss),
        ("leaseq-sqlite ProcessCrash", Durability::ProcessCrash),
    ] {
        let file = SqliteFile::new();
        runs.push((
            what,
            tokio.block_on(async {
                low_load::latencies(file.open(d, rt.clone())?, PER_SEC, samples).await
            }),
        ));
    }
    runs.push((
        "leaseq-postgres (LISTEN/NOTIFY)",
        tokio.block_on(async {
            low_load::latencies(open_pg(&a.url, &schema).await?, PER_SEC, samples).await
        }),
    ));
    let _ = tokio.block_on(drop_schema(&a.url, &schema));
    for (what, v) in runs {
        match v {
            Ok(v) if !v.is_empty() => {
                let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
                r.latency.push((what, q(0.5), q(0.99)));
            }
            Ok(_) => eprintln!("FAILED: latency {what}: no samples"),
            Err(e) => eprintln!("FAILED: latency {what}: {e}"),
        }
    }
}

fn main() -> std::process::ExitCode {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("pipeline_bench: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let args: Vec<String> = std::env::args().skip(1).collect();
    println!("pipeline_bench {}", args.join(" "));
    println!(
        "{} items of 16 bytes, 1 producer, {CONSUMERS} consumers, {} round(s) (memory: at least 5); \
         {} cores; load average at start: {}",
        a.items,
        a.rounds,
        throughput::cores(),
        load()
    );
    let began = std::time::Instant::now();
    let mut r = Results::default();
    type Section = fn(&Tokio, &Args, &mut Results);
    let sections: [(&str, Section); 6] = [
        ("memory", memory),
        ("sqlite", sqlite),
        ("postgres", postgres),
        ("brokers", brokers),
        ("curve", curve),
        ("latency", latency),
    ];
    for (name, f) in sections {
        if a.only.iter().any(|o| o == name) {
            eprintln!("[{:>6.1} s] {name}", began.elapsed().as_secs_f64());
            f(&tokio, &a, &mut r);
        }
    }
    println!(
        "load average at end: {}; took {:.0} s\n",
        load(),
        began.elapsed().as_secs_f64()
    );
    r.print();
    std::process::ExitCode::SUCCESS
}
