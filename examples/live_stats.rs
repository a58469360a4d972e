//! Live stats: a leaseq `Pool` on tokio working a stream of mixed items, watched through
//! `Pool::stats` once a second.
//!
//! Three item types arrive for the first 45% of the run, at 250 items/s for a while (more
//! than the 16 workers keep up with, so a backlog builds) and then at 120 items/s (it
//! drains):
//!
//! - `thumbnail` (60%): 20 to 60 ms; 1 in 100 hangs (a decoder stuck in a loop);
//! - `transcode` (15%): 200 to 600 ms; 1 in 20 hangs;
//! - `email` (25%): 2 to 8 ms; 1 in 10 fails once with a retryable error (SMTP 421) and
//!   succeeds on its retry, 1 in 50 fails for good (SMTP 550: dead-lettered at once).
//!
//! Each item runs inside a 750 ms item timeout, so a hung one is handed back at once, runs
//! again after a backoff, and is dead-lettered after its third attempt. Once a second the
//! example prints one line: items ready, in flight and dead-lettered, acks, handler errors
//! and timeouts per second over the last second, and the p99 handling time of each type
//! (from `PoolStats::types`; timed-out runs are kept out of it). On a terminal the line is
//! redrawn in place; elsewhere (a CI log) each second gets a line of its own. The run ends by
//! itself once the queue is empty, or at the time limit (6 s by default, `--seconds N`),
//! and prints the pool's final report.
//!
//! ```sh
//! cargo run --release --example live_stats
//! cargo run --release --example live_stats -- --seconds 10 --seed 7
//! ```

use std::process::ExitCode;
use std::time::{Duration, Instant};

use leaseq_bench_kit::demo::{args_or_exit, Spec, StatusLine};
use leaseq_bench_kit::rng::Rng;
use leaseq_tokio::{Backoff, Config, ItemTimeout, Job, JobError, LeaseQueue, Pool, PoolStats};

const USAGE: &str = "\
live_stats: a leaseq Pool on tokio working a stream of mixed items, with a live stats line

USAGE:
    cargo run --release --example live_stats [-- OPTIONS]

OPTIONS:
    --seconds N    how long to run at most (default 6); items arrive during the first 45%
    --seed N       seed of the PRNG that draws the items (default 42)
    -h, --help     print this help";

const DEFAULT_SECONDS: u64 = 6;
const WORKERS: usize = 16;
const ITEM_TIMEOUT: Duration = Duration::from_millis(750);
const MAX_ATTEMPTS: u32 = 3;

/// What becomes of an item each time it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Ok,
    /// Never finishes: only the item timeout ends it.
    Hang,
    /// A retryable error on the first attempt, fine on the next.
    FailOnce,
    /// A permanent error: dead-lettered at once.
    Permanent,
}

#[derive(Clone, Debug)]
struct Task {
    kind: &'static str,
    took: Duration,
    fate: Fate,
}

impl Task {
    /// One item, drawn from `rng`.
    fn draw(rng: &mut Rng) -> Self {
        let ms =
            |rng: &mut Rng, lo: u64, hi: u64| Duration::from_millis(lo + rng.below(hi - lo + 1));
        let roll = rng.below(100);
        let fate_roll = rng.below(100);
        if roll < 60 {
            Task {
                kind: "thumbnail",
                took: ms(rng, 20, 60),
                fate: if fate_roll < 1 { Fate::Hang } else { Fate::Ok },
            }
        } else if roll < 75 {
            Task {
                kind: "transcode",
                took: ms(rng, 200, 600),
                fate: if fate_roll < 5 { Fate::Hang } else { Fate::Ok },
            }
        } else {
            Task {
                kind: "email",
                took: ms(rng, 2, 8),
                fate: match fate_roll {
                    0..=9 => Fate::FailOnce,
                    10..=11 => Fate::Permanent,
                    _ => Fate::Ok,
                },
            }
        }
    }
}

async fn handle(job: Job<Task>) -> Result<(), JobError> {
    let task = job.item;
    if task.fate == Fate::Hang {
        std::future::pending::<()>().await;
    }
    tokio::time::sleep(task.took).await;
    match task.fate {
        Fate::FailOnce if job.attempt == 1 => Err(JobError::retry("smtp 421: try again later")),
        Fate::Permanent => Err(JobError::permanent("smtp 550: no such mailbox")),
        _ => Ok(()),
    }
}

/// Pushes items for `window`: at 250 items/s for its first 40%, then at 120 items/s.
/// Returns how many it pushed.
async fn produce(queue: LeaseQueue<Task>, window: Duration, seed: u64) -> u64 {
    let mut rng = Rng::new(seed);
    let start = tokio::time::Instant::now();
    let burst_until = start + window.mul_f64(0.4);
    let end = start + window;
    let mut next = start;
    let mut pushed = 0;
    while next < end {
        tokio::time::sleep_until(next).await;
        if queue.push(Task::draw(&mut rng)).await.is_err() {
            break;
        }
        pushed += 1;
        let rate = if next < burst_until { 250.0 } else { 120.0 };
        next += Duration::from_secs_f64(1.0 / rate);
    }
    pushed
}

/// Counters the per-second rates are taken from.
#[derive(Clone, Copy, Default)]
struct Totals {
    acked: u64,
    errors: u64,
    timed_out: u64,
}

impl Totals {
    fn of(stats: &PoolStats) -> Self {
        Totals {
            acked: stats.queue.acked,
            errors: stats.failed + stats.permanent + stats.panicked,
            timed_out: stats.timed_out,
        }
    }
}

fn millis(d: Option<Duration>) -> String {
    d.map_or("-".to_string(), |d| {
        let ms = d.as_secs_f64() * 1e3;
        if ms < 9.95 {
            format!("{ms:.1} ms")
        } else {
            format!("{ms:.0} ms")
        }
    })
}

/// The one-line view: gauges now, rates over the last `dt`, p99 per type.
fn view(at: Duration, stats: &PoolStats, prev: Totals, dt: Duration) -> String {
    let now = Totals::of(stats);
    let per_s = |a: u64, b: u64| a.saturating_sub(b) as f64 / dt.as_secs_f64().max(1e-3);
    let q = &stats.queue;
    let p99: Vec<String> = stats
        .types
        .iter()
        .map(|(kind, report)| format!("{kind} {}", millis(report.p99)))
        .collect();
    format!(
        "[{:>2.0} s] ready {:>4}  in flight {:>2}  dead {:>3} | acked/s {:>4.0}  failed/s {:>3.0}  \
         timed out/s {:>2.0} | p99 {}",
        at.as_secs_f64(),
        q.ready + q.delayed,
        q.in_flight,
        q.dead,
        per_s(now.acked, prev.acked),
        per_s(now.errors, prev.errors),
        per_s(now.timed_out, prev.timed_out),
        if p99.is_empty() {
            "-".to_string()
        } else {
            p99.join(", ")
        },
    )
}

fn main() -> ExitCode {
    // What `#[tokio::main]` builds, written out: the suite's tokio has no `macros` feature
    // (it would put syn into every example's build).
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(run()),
        Err(e) => {
            eprintln!("error: cannot start a tokio runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> ExitCode {
    let spec = Spec {
        flag: None,
        seeds: false,
        seconds: true,
    };
    let options = match args_or_exit(spec, USAGE) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let limit = Duration::from_secs(options.seconds.unwrap_or(DEFAULT_SECONDS));
    // The rest of the time lets the last hung items use up their three attempts.
    let window = limit.mul_f64(0.45);
    println!(
        "live_stats: {WORKERS} workers on tokio; thumbnail, transcode and email items arrive for \
         {:.1} s (250/s, then 120/s), some hang, some fail; item timeout {} ms, {MAX_ATTEMPTS} \
         attempts; at most {} s; seed {}.",
        window.as_secs_f64(),
        ITEM_TIMEOUT.as_millis(),
        limit.as_secs(),
        options.seed,
    );
    println!(
        "Each second: ready (and backing off), in flight, dead-lettered; acks, handler errors \
         and timeouts per second; p99 handling time per item type."
    );

    let config = Config::new(Duration::from_secs(2))
        .with_max_attempts(MAX_ATTEMPTS)
        .with_backoff(Backoff::exponential(
            Duration::from_millis(100),
            Duration::from_secs(1),
        ));
    let queue: LeaseQueue<Task> = LeaseQueue::new(config).expect("a valid config");
    let pool: Pool<Task> = Pool::builder(queue.clone())
        .workers(WORKERS)
        .item_timeout(ItemTimeout::Fixed(ITEM_TIMEOUT))
        .heartbeat(true)
        .item_type(|task: &Task| task.kind)
        .spawn(handle);

    let start = Instant::now();
    let producer = tokio::spawn(produce(queue.clone(), window, options.seed));
    let mut line = StatusLine::stdout();
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::now() + Duration::from_secs(1),
        Duration::from_secs(1),
    );
    let (mut prev, mut prev_at) = (Totals::default(), start);
    loop {
        tick.tick().await;
        let stats = pool.stats();
        let now = Instant::now();
        line.show(&view(
            now - start,
            &stats,
            prev,
            now.saturating_duration_since(prev_at),
        ));
        (prev, prev_at) = (Totals::of(&stats), now);
        let drained = producer.is_finished() && stats.queue.live() == 0;
        if drained || now - start >= limit {
            break;
        }
    }
    line.keep();

    let left = queue.stats().live();
    let report = pool.shutdown(Duration::from_millis(500)).await;
    queue.close();
    let pushed = producer.await.unwrap_or(0);
    let s = &report.stats;
    println!();
    println!(
        "{} after {:.1} s: {pushed} items pushed, {} acked, {} dead-lettered, {left} still \
         queued or running; handlings: {} ok, {} failed, {} permanent, {} timed out.",
        if left == 0 {
            "Drained"
        } else {
            "Time limit reached"
        },
        start.elapsed().as_secs_f64(),
        s.queue.acked,
        s.queue.dead_lettered,
        s.ok,
        s.failed,
        s.permanent,
        s.timed_out,
    );
    println!();
    println!("The pool's final report (PoolReport, {{:#?}}):");
    println!("{report:#?}");
    ExitCode::SUCCESS
}
