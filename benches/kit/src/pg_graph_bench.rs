//! What jobs that wait for other jobs cost on Postgres (issue 33; `examples/pg_graph_bench.rs`).
//!
//! - [`run_plain_rounds`]: jobs **without** dependencies, a `PgPool` of 4 no-op workers
//!   ([`run_pool_with`]) on two schemas in the same run. Until schema step 13 one had the
//!   graph's two row triggers dropped and `items.node` with them; step 13 dropped the
//!   triggers everywhere and its statements read `items.node`, so both schemas are now the
//!   same (an A/A run: the noise of the rounds). What the graph costs a plain item is
//!   measured on the server by `benches/pg_graph_told_cost.sh` (BENCHMARKS.md, round 9).
//!   Rounds alternate which goes first, after a discarded warm-up of each.
//! - [`run_fanout_rounds`]: a batch of `n` children and one callback
//!   (`DependencyStore::push_batch`) drained by the same pool, against `n` independent jobs
//!   (`push_batch` of the store, 256 a statement), each timed from the first push to the
//!   last job handled; rates count the `n` jobs. Goal: fan-out >= 0.7 x independent.
//!
//! Every run has the store's upkeep off (`vacuum_after_rows(0)`), on both sides.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leaseq_async::dependencies::{BatchOn, DependencyStore};
use leaseq_async::Job;
use leaseq_postgres::{Options, PgPool, PgQueue};
use tokio::sync::Notify;
use tokio_postgres::NoTls;

use crate::pg_store_bench::{open_queue, push_range, run_pool_with, unique, BenchError};

/// The plain path's goal: with the graph's triggers at least this fraction of without.
pub const PLAIN_GOAL: f64 = 0.95;
/// The fan-out's goal: its rate at least this fraction of independent jobs'.
pub const FANOUT_GOAL: f64 = 0.7;

/// Rounds of the pool on a table with and without the graph's triggers: items/s, `[without,
/// with]`, in schemas `{prefix}_off` and `{prefix}_on` (dropped first).
pub async fn run_plain_rounds(
    url: &str,
    prefix: &str,
    rounds: usize,
    items: u64,
) -> Result<Vec<[f64; 2]>, BenchError> {
    let schemas = [format!("{prefix}_off"), format!("{prefix}_on")];
    let (client, conn) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(conn);
    for s in &schemas {
        client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{s}\" CASCADE"))
            .await?;
        let q = open_queue(url, s, "migrate", Options::new()).await?;
        q.close().await.map_err(|e| format!("close: {e:?}"))?;
    }
    let run = |i: usize, n: u64| {
        let schema = schemas[i].clone();
        async move {
            let r = run_pool_with(url, &schema, "bench-plain", n, 4, quiet(), None).await?;
            Ok::<f64, BenchError>(r.items_per_sec)
        }
    };
    run(0, items / 10).await?;
    run(1, items / 10).await?;
    let mut out = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let mut r = [0.0; 2];
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            r[i] = run(i, items).await?;
        }
        out.push(r);
    }
    Ok(out)
}

/// The store's options in every run: no upkeep (its `REINDEX CONCURRENTLY` waits for
/// every older transaction of the server, which other clients may hold for minutes).
/// `LEASEQ_BENCH_ACKS_IN_FLIGHT` sets `Options::acks_in_flight` on both sides (4 unless set).
pub(crate) fn quiet() -> Options {
    let acks = std::env::var("LEASEQ_BENCH_ACKS_IN_FLIGHT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    Options::new().vacuum_after_rows(0).acks_in_flight(acks)
}

/// Where one run's time went, each from the first push: the push returned (every item, or
/// every child and the callback, committed), the first job handled, the `n`-th job handled
/// (the last child of a fan-out), the last job handled (a fan-out's callback; the `n`-th
/// for independent jobs).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Phases {
    /// The push's wall time (independent jobs: every batch of 256, the pool draining meanwhile).
    pub pushed: Duration,
    /// Until the first job was handled.
    pub first: Duration,
    /// Until the `n`-th job was handled (a fan-out's last child).
    pub children: Duration,
    /// Until the last job was handled: the run's time (a fan-out's callback).
    pub total: Duration,
}

impl Phases {
    /// `n` jobs over [`total`](Self::total), jobs/s.
    pub fn rate(&self, n: u64) -> f64 {
        n as f64 / self.total.as_secs_f64()
    }
}

/// The instants a [`counting_pool`] saw: its first job handled, its `n`-th, its `target`-th.
#[derive(Default)]
pub(crate) struct Seen {
    first: Option<Instant>,
    nth: Option<Instant>,
    last: Option<Instant>,
}

/// A pool of 4 no-op workers on `q` that notes when it handled its first, `n`-th and
/// `target`-th job, and says when it has handled `target`.
pub(crate) fn counting_pool(
    q: &PgQueue<Vec<u8>>,
    n: u64,
    target: u64,
) -> (PgPool<Vec<u8>>, Arc<Notify>, Arc<Mutex<Seen>>) {
    let handled = Arc::new(AtomicU64::new(0));
    let all = Arc::new(Notify::new());
    let seen = Arc::new(Mutex::new(Seen::default()));
    let pool = PgPool::builder(q.clone()).workers(4).spawn({
        let (all, seen) = (all.clone(), seen.clone());
        move |_job: Job<Vec<u8>>| {
            let k = handled.fetch_add(1, Ordering::AcqRel) + 1;
            if k == 1 || k == n || k == target {
                let now = Instant::now();
                let mut s = seen.lock().unwrap_or_else(|e| e.into_inner());
                if k == 1 {
                    s.first = Some(now);
                }
                if k == n {
                    s.nth = Some(now);
                }
                if k == target {
                    s.last = Some(now);
                }
            }
            if k == target {
                all.notify_one();
            }
            async { Ok(()) }
        }
    });
    (pool, all, seen)
}

/// A round's pushes: `n` children of a batch into one callback (`fanout`), or `n`
/// independent jobs.
pub(crate) async fn push_round(
    q: &PgQueue<Vec<u8>>,
    n: u64,
    fanout: bool,
) -> Result<(), BenchError> {
    if fanout {
        let kids: Vec<Vec<u8>> = (0..n).map(|i| i.to_le_bytes().repeat(2)).collect();
        q.store()
            .push_batch(kids, b"callback".to_vec(), BatchOn::Complete)
            .await
            .map_err(|e| format!("push_batch: {e}"))?;
    } else {
        push_range(q, 0, n).await?;
    }
    Ok(())
}

/// `n` jobs: independent (`fanout` false) or a batch's children with one callback; where
/// the time from the first push to the last job handled went.
async fn one_run(url: &str, schema: &str, n: u64, fanout: bool) -> Result<Phases, BenchError> {
    let q = open_queue(url, schema, &unique("bench-fanout"), quiet()).await?;
    let target = if fanout { n + 1 } else { n };
    let (pool, all, seen) = counting_pool(&q, n, target);
    let start = Instant::now();
    push_round(&q, n, fanout).await?;
    let pushed = start.elapsed();
    all.notified().await;
    let elapsed = start.elapsed();
    let since = |t: Option<Instant>| t.map_or(elapsed, |t| t.duration_since(start));
    let phases = {
        let s = seen.lock().unwrap_or_else(|e| e.into_inner());
        Phases {
            pushed,
            first: since(s.first),
            children: since(s.nth),
            total: since(s.last),
        }
    };
    let report = pool.shutdown(Duration::from_secs(30)).await;
    if report.stats.ok != target {
        return Err(format!("pool handled {} of {target}", report.stats.ok).into());
    }
    q.close().await.map_err(|e| format!("close: {e:?}"))?;
    Ok(phases)
}

/// Rounds of `n` independent jobs and a fan-out of `n` children into one callback, in
/// `schema` (dropped first): where each run's time went, `[independent, fan-out]`.
pub async fn run_fanout_rounds(
    url: &str,
    schema: &str,
    rounds: usize,
    n: u64,
) -> Result<Vec<[Phases; 2]>, BenchError> {
    crate::pg_store_bench::drop_schema(url, schema).await?;
    one_run(url, schema, n / 10, false).await?;
    one_run(url, schema, n / 10, true).await?;
    let mut out = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let mut r = [Phases::default(); 2];
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            r[i] = one_run(url, schema, n, i == 1).await?;
        }
        out.push(r);
    }
    Ok(out)
}
