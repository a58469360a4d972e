//! The cost of a batch with a callback on the memory store (issue 33), against the same
//! number of independent jobs in the same run: `cargo run --release --example graph_fanout`.
//!
//! On one task of a tokio runtime (one worker thread), each round runs, one after the
//! other: 1,000 independent jobs (pushed, then received and acked one at a time), and a
//! batch of 1,000 children and one `on complete` callback (`DependencyStore::push_batch`,
//! then every child and the callback received and acked one at a time). The rate is jobs
//! acked per second, the callback not counted. The machine may be noisy: a warm-up round
//! is discarded, and the figure printed is the median of 21 rounds' ratios (fan-out rate
//! over independent rate), each taken between runs a few milliseconds apart.
//!
//! `graph_fanout --only independent|fanout ROUNDS` runs one side alone (for callgrind:
//! instructions per job are its total over `ROUNDS * 1,000`).
//!
//! The last line is machine-readable: `fanout_ratio=<r> independent_ns_per_job=<a>
//! fanout_ns_per_job=<b>`.

use std::time::{Duration, Instant};

use leaseq_async::dependencies::{BatchOn, DependencyStore};
use leaseq_async::{Config, LeaseQueue};
use leaseq_tokio::TokioRuntime;

const JOBS: u64 = 1_000;
const ROUNDS: usize = 21;

fn queue(rt: &TokioRuntime) -> LeaseQueue<u64, TokioRuntime> {
    let config = Config::new(Duration::from_secs(60));
    LeaseQueue::with_runtime(rt.clone(), config).expect("valid config")
}

/// 1,000 independent jobs pushed, received and acked: the time it took.
async fn independent(rt: &TokioRuntime) -> Duration {
    let q = queue(rt);
    let start = Instant::now();
    for i in 0..JOBS {
        q.try_push(i).expect("open, unbounded");
    }
    for _ in 0..JOBS {
        q.receive()
            .await
            .expect("an item")
            .ack()
            .await
            .expect("fresh lease");
    }
    start.elapsed()
}

/// A batch of 1,000 children and its callback pushed, every job received and acked.
async fn fanout(rt: &TokioRuntime) -> Duration {
    let q = queue(rt);
    let start = Instant::now();
    let batch = q
        .store()
        .push_batch((0..JOBS).collect(), u64::MAX, BatchOn::Complete)
        .await
        .expect("open, unbounded");
    for _ in 0..=JOBS {
        q.receive()
            .await
            .expect("an item")
            .ack()
            .await
            .expect("fresh lease");
    }
    let elapsed = start.elapsed();
    let counts = q
        .store()
        .batch_counts(batch)
        .await
        .unwrap()
        .expect("the batch");
    assert_eq!(counts.acked, JOBS, "every child acked");
    assert_eq!(q.stats().acked, JOBS + 1, "and the callback, once");
    elapsed
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let rt = TokioRuntime::new(tokio.handle().clone());
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--only") {
        let rounds: usize = args.get(2).map_or(10, |a| a.parse().expect("a count"));
        for _ in 0..rounds {
            match args.get(1).map(String::as_str) {
                Some("independent") => tokio.block_on(independent(&rt)),
                Some("fanout") => tokio.block_on(fanout(&rt)),
                _ => panic!("--only independent|fanout ROUNDS"),
            };
        }
        return;
    }
    tokio.block_on(independent(&rt));
    tokio.block_on(fanout(&rt));
    let (mut ratios, mut ind, mut fan) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let a = tokio.block_on(independent(&rt)).as_nanos() as f64 / JOBS as f64;
        let b = tokio.block_on(fanout(&rt)).as_nanos() as f64 / JOBS as f64;
        ratios.push(a / b);
        ind.push(a);
        fan.push(b);
    }
    let (r, a, b) = (median(ratios), median(ind), median(fan));
    println!("1,000 independent jobs: {a:.0} ns a job; a fan-out of 1,000 into one callback: {b:.0} ns a job");
    println!("fanout_ratio={r:.3} independent_ns_per_job={a:.0} fanout_ns_per_job={b:.0}");
}
