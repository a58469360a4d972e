//! Redelivery: what becomes of work when handlers hang or run slow, on a plain channel and on
//! leaseq's lease queue, on tokio and on smol.
//!
//! Scenario: 500 items, 10 workers. 2% of the items (10, chosen by a seeded PRNG) hang every
//! time they run, until the 2 s per-item timeout; every other handler call takes 0.6 s with
//! probability 0.1 (drawn per call, seeded) and 10 ms otherwise. Leases last 0.5 s (the
//! visibility timeout), an item gets at most 3 attempts, and the run is cut at 10 s. Four
//! set-ups, each on tokio and on smol:
//!
//! - (a) a plain channel (tokio `mpsc` with the receiver behind a mutex / `async-channel`):
//!   the item timeout simply drops the item;
//! - (b) a lease queue without heartbeat: the worker gives up at 2 s and abandons the item
//!   without handing it back, so it returns only when its lease expires;
//! - (c) the same with a heartbeat that runs beside the handler: an abandoned item returns
//!   once the heartbeat stops and its last extension runs out;
//! - (d) leaseq's `Pool`: heartbeat on, and `ItemTimeout::Fixed(2 s)` hands the item back
//!   the moment its timeout fires.
//!
//! By default every row runs in virtual time (tokio's paused clock; `SimRuntime`, smol's
//! executor on a virtual clock), so the table is exact and the same on every run for a
//! seed. `--real-time` runs the same rows on real clocks (tokio multi-thread,
//! `SmolRuntime::global()`), which takes about 20 s and shows its progress meanwhile.
//! `--seeds A-B` runs the virtual-time rows for every seed from A to B and prints what
//! each column came to across them (the README's figures for seeds 1-20 come from it).
//!
//! ```sh
//! cargo run --release --example redelivery                 # virtual time, seed 42
//! cargo run --release --example redelivery -- --seed 7
//! cargo run --release --example redelivery -- --seeds 1-20
//! cargo run --release --example redelivery -- --real-time
//! ```

use std::pin::pin;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::{join_all, select, Either};
use leaseq_async::{Backoff, Config, Delivery, ItemTimeout, LeaseQueue, Pool, Runtime, SimRuntime};
use leaseq_bench_kit::demo::{args_or_exit, pick_hung, Progress, Spec, DEFAULT_SEED};
use leaseq_bench_kit::rng::mix64;
use leaseq_smol::SmolRuntime;
use leaseq_tokio::TokioRuntime;

const USAGE: &str = "\
redelivery: a plain channel vs leaseq's lease queue when handlers hang or run slow

USAGE:
    cargo run --release --example redelivery [-- OPTIONS]

OPTIONS:
    --seed N       seed of the PRNG that picks the hung items and the slow calls (default 42)
    --seeds A-B    run the virtual-time rows for every seed from A to B (e.g. 1-20) and
                   print each column's range, median and distribution across the seeds
    --real-time    run every row on real clocks (tokio multi-thread, SmolRuntime::global());
                   takes about 20 s, shows its progress every 2 s (every second, in place,
                   on a terminal), and the figures vary a little from run to run
    -h, --help     print this help

By default every row runs in virtual time: tokio rows on tokio's paused clock
(current_thread runtime, start_paused), smol rows on leaseq_async::SimRuntime (smol's
executor, async-executor, on a virtual clock). The table is then exact and reproducible.";

// ----- the scenario ----------------------------------------------------------------------

struct Scenario {
    seed: u64,
    items: u32,
    workers: usize,
    hung: Vec<bool>,
    /// Probability that one handler call is slow, in percent.
    slow_percent: u64,
    slow: Duration,
    fast: Duration,
    item_timeout: Duration,
    visibility: Duration,
    max_attempts: u32,
    cut: Duration,
}

/// What happened to each item in one row: handler calls started and finished, and drops.
struct Tracker {
    calls: Vec<AtomicU32>,
    finished: Vec<AtomicU32>,
    dropped: Vec<AtomicU32>,
    /// Row (b'): acks not sent because the lease deadline had passed.
    refused_late: AtomicU32,
}

/// Handler calls finished and rows done, in every row of the process: what `--real-time`
/// shows as its progress.
static CALLS_FINISHED: AtomicU64 = AtomicU64::new(0);
static ROWS_DONE: AtomicU64 = AtomicU64::new(0);

// ----- the rows --------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Row {
    Plain,
    NoHeartbeat,
    /// (b) with the late ack of an unclaimed item refused: the reference queue's rule.
    NoHeartbeatStrict,
    Heartbeat,
    HandBack,
}

const ROWS: [Row; 5] = [
    Row::Plain,
    Row::NoHeartbeat,
    Row::NoHeartbeatStrict,
    Row::Heartbeat,
    Row::HandBack,
];

/// Which plain channel a runtime's row (a) uses.
#[derive(Clone, Copy)]
enum Flavor {
    /// `tokio::sync::mpsc`, the receiver behind a `tokio::sync::Mutex`.
    Tokio,
    /// `async-channel`.
    Smol,
}

#[derive(Clone)]
enum PlainRx {
    Tokio(Arc<tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<u32>>>),
    Smol(async_channel::Receiver<u32>),
}

/// One row's figures at the cut.
#[derive(Default)]
struct RowResult {
    /// Distinct items whose handler finished at least once.
    processed: u64,
    /// Items nowhere any more: not processed, not dead-lettered, not waiting.
    lost: u64,
    dead_lettered: u64,
    /// Items whose handler finished more than once.
    twice: u64,
    /// Stale acks refused plus late acks of unclaimed items accepted.
    late_acks: u64,
    /// ... of which stale acks refused, and late acks of unclaimed items accepted (queue
    /// stats), and acks refused by row (b')'s rule.
    late_stale: u64,
    late_unclaimed: u64,
    late_refused: u64,
    /// Items still in the queue (ready, backing off or leased) or channel at the cut.
    retrying: u64,
    /// Hung items dead-lettered by the cut, and when the last of them was.
    hung_dead: u64,
    last_hung_dead_at: Option<Duration>,
    /// Deliveries after the first.
    redelivered: u64,
    /// Leases that ran out.
    lease_expired: u64,
    /// Real time the row took.
    wall: Duration,
}

fn main() -> ExitCode {
    let spec = Spec {
        flag: Some("--real-time"),
        seeds: true,
        seconds: false,
    };
    let options = match args_or_exit(spec, USAGE) {
        Ok(o) => o,
        Err(code) => return code,
    };
    if let Some((first, last)) = options.seeds {
        if options.flag {
            eprintln!("error: --seeds runs in virtual time only; drop --real-time\n\n{USAGE}");
            return ExitCode::from(2);
        }
        sweep(first, last);
        return ExitCode::SUCCESS;
    }
    let sc = Arc::new(Scenario::new(options.seed));
    println!(
        "redelivery: {} items, {} workers; {} hang every time until the {} s item timeout \
         (2%, items {:?});",
        sc.items,
        sc.workers,
        sc.hung_items().len(),
        sc.item_timeout.as_secs(),
        sc.hung_items(),
    );
    println!(
        "each other call takes {} ms, or {} ms with probability 0.{} (per call); visibility \
         {} ms, max {} attempts, cut at {} s.",
        sc.fast.as_millis(),
        sc.slow.as_millis(),
        sc.slow_percent / 10,
        sc.visibility.as_millis(),
        sc.max_attempts,
        sc.cut.as_secs(),
    );
    println!(
        "seed {} (change with --seed N){}",
        sc.seed,
        if sc.seed == DEFAULT_SEED {
            ", the default"
        } else {
            ""
        }
    );
    let started = Instant::now();
    let (names, results): ([&str; 2], [Vec<RowResult>; 2]) = if options.flag {
        println!(
            "Real time: tokio rows on a multi-thread runtime, smol rows on SmolRuntime::global(); \
             the five rows of a runtime run side by side (about 10 s per runtime)."
        );
        (["tokio (real time)", "smol (real time)"], real_time(&sc))
    } else {
        println!(
            "Virtual time: tokio rows on tokio's paused clock (current_thread, start_paused); \
             smol rows on leaseq_async::SimRuntime, smol's executor (async-executor) on a \
             virtual clock. Exact and reproducible; --real-time for real clocks."
        );
        (
            ["tokio (paused clock)", "smol (SimRuntime)"],
            [tokio_virtual(&sc), smol_virtual(&sc)],
        )
    };
    println!();
    let runtimes: Vec<(&str, &[RowResult])> = names
        .iter()
        .zip(results.iter())
        .map(|(n, r)| (*n, r.as_slice()))
        .collect();
    print_table(&runtimes);
    println!(
        "processed: distinct items whose handler finished; lost: items gone without a trace; \
         twice: items whose handler finished more than once; late acks: stale acks refused + \
         late acks of unclaimed items accepted; retrying: items still queued, backing off or \
         leased at the cut. An item can be both processed and dead-lettered (its acks all \
         came late)."
    );
    println!();
    print_details(&runtimes);
    print_reading(&results[0]);
    println!();
    println!(
        "Took {:.3} s of real time for {} rows of {} s each.",
        started.elapsed().as_secs_f64(),
        2 * ROWS.len(),
        sc.cut.as_secs()
    );
    ExitCode::SUCCESS
}

mod output;
mod rows;
mod runtimes;
mod scenario;
mod sweep;

use output::*;
use rows::*;
use runtimes::*;
use scenario::*;
use sweep::*;
