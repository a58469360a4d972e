//! The leaseq-postgres store measured end to end, beside the bare loop of [`crate::pg_bare`]:
//! the same item count, 16-byte payloads, 4 workers taking 16 at a time, a producer pushing
//! batches of 256 while the workers run, the server's `synchronous_commit` (on by default).
//!
//! - [`run_store`]: a producer task `push_batch`es 256 items at a time (each batch one
//!   committed insert, awaited before the next, as the bare producer does); `workers` tasks
//!   loop `receive_batch(claim)` then `ack_batch` of what they got. The clock runs from just
//!   before the first push to the end of the last ack; opening the queue (connecting,
//!   migrating) is outside it.
//! - [`run_pool`]: the same producer feeding a [`PgPool`] of `workers` workers with a no-op
//!   async handler (each worker receives and acks one item at a time); the clock stops once
//!   every item is handled and the pool is shut down (its last acks committed).
//!
//! The table-size measurement is in [`crate::pg_size_bench`].
//!
//! Each run opens the queue it is given (empty at the start) and checks at the end that
//! every item was acked exactly once (no redelivery, no refused ack, no row left).

use std::error::Error;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use leaseq_async::{Config, Job};
use leaseq_postgres::{BytesCodec, Options, PgPool, PgQueue, Postgres};
use tokio::sync::{Barrier, Notify};
use tokio_postgres::NoTls;

use crate::pg_bare::{PAYLOAD_BYTES, PUSH_BATCH};

/// Whatever failed: the server, or a check.
pub type BenchError = Box<dyn Error + Send + Sync>;

/// What one run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StoreReport {
    /// Items pushed, received and acked (each exactly once).
    pub items: u64,
    /// Wall time from just before the first push to the end of the last ack.
    pub elapsed: Duration,
    /// `items / elapsed`.
    pub items_per_sec: f64,
}

impl StoreReport {
    pub(crate) fn new(items: u64, elapsed: Duration) -> Self {
        StoreReport {
            items,
            elapsed,
            items_per_sec: items as f64 / elapsed.as_secs_f64(),
        }
    }
}

/// A queue name no earlier run used.
pub fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{prefix}-{}-{nanos}", std::process::id())
}

/// The `i`-th payload: 16 bytes, `i` then `!i`.
fn payload(i: u64) -> Vec<u8> {
    let mut p = vec![0u8; PAYLOAD_BYTES];
    p[..8].copy_from_slice(&i.to_le_bytes());
    p[8..].copy_from_slice(&(!i).to_le_bytes());
    p
}

/// Opens `queue` in `schema` with a 30 s visibility, as the bare loop's claim uses.
pub async fn open_queue(
    url: &str,
    schema: &str,
    queue: &str,
    options: Options,
) -> Result<PgQueue<Vec<u8>>, BenchError> {
    open_capped(url, schema, queue, options, None).await
}

/// [`open_queue`] with a capacity (`Config::with_capacity`), if `capacity` is given.
pub async fn open_capped(
    url: &str,
    schema: &str,
    queue: &str,
    options: Options,
    capacity: Option<usize>,
) -> Result<PgQueue<Vec<u8>>, BenchError> {
    let mut config = Config::new(Duration::from_secs(30));
    if let Some(n) = capacity {
        config = config.with_capacity(n);
    }
    let store = Postgres::url(url).options(options.schema(schema));
    Ok(leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(config)
        .name(queue.to_string())
        .codec(BytesCodec)
        .open(store)
        .await?)
}

/// Pushes items `from..to` in batches of [`PUSH_BATCH`], each awaited (committed).
pub async fn push_range(q: &PgQueue<Vec<u8>>, from: u64, to: u64) -> Result<(), BenchError> {
    let mut next = from;
    while next < to {
        let n = (to - next).min(PUSH_BATCH as u64);
        let batch: Vec<Vec<u8>> = (next..next + n).map(payload).collect();
        q.push_batch(batch)
            .await
            .map_err(|e| format!("push: {e:?}"))?;
        next += n;
    }
    Ok(())
}

/// Counts the queue's rows now and fails unless none is left and this process acked
/// `items`.
pub(crate) async fn check_drained(q: &PgQueue<Vec<u8>>, items: u64) -> Result<(), BenchError> {
    let s = q.refresh_stats().await?;
    let left = (s.ready, s.delayed, s.in_flight, s.dead);
    if left != (0, 0, 0, 0) || s.acked != items || s.redelivered != 0 {
        return Err(format!(
            "store check failed: (ready, delayed, in flight, dead) = {left:?}, acked {} of \
             {items}, redelivered {}",
            s.acked, s.redelivered
        )
        .into());
    }
    Ok(())
}

/// One worker: `receive_batch(claim)` then `ack_batch`, until the queue is closed. Items
/// are reserved from `budget` first (if given), so that the workers ack exactly that many.
pub(crate) async fn work(
    q: PgQueue<Vec<u8>>,
    claim: usize,
    acked: Arc<AtomicU64>,
    target: u64,
    budget: Option<Arc<AtomicU64>>,
) -> Result<Option<Instant>, BenchError> {
    let mut last = None;
    loop {
        let want = match &budget {
            None => claim,
            Some(b) => {
                let got = b
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                        Some(left - left.min(claim as u64))
                    })
                    .unwrap_or(0);
                got.min(claim as u64) as usize
            }
        };
        if want == 0 {
            return Ok(last);
        }
        let batch = q.receive_batch(want).await;
        if batch.is_empty() {
            return Ok(last); // closed
        }
        let n = batch.len();
        if let Some(b) = &budget {
            b.fetch_add((want - n) as u64, Ordering::AcqRel);
        }
        if let Some(d) = batch
            .iter()
            .find(|d| d.attempt() != 1 || d.item().len() != 16)
        {
            return Err(format!("item {:?} delivered twice or mangled", d.id()).into());
        }
        let r = q.ack_batch(batch).await;
        if r.accepted() != n {
            return Err(format!("ack refused: {:?}", r.stale()).into());
        }
        last = Some(Instant::now());
        if acked.fetch_add(n as u64, Ordering::AcqRel) + n as u64 >= target {
            q.close(); // every item acked: wake the workers still waiting
        }
    }
}

/// The store end to end: one producer pushes `items` in batches of [`PUSH_BATCH`] while
/// `workers` workers receive up to `claim` at a time and ack each batch (see the module
/// docs). Opens `queue` (empty) in `schema` with `options`.
pub async fn run_store(
    url: &str,
    schema: &str,
    queue: &str,
    options: Options,
    items: u64,
    workers: usize,
    claim: usize,
) -> Result<StoreReport, BenchError> {
    let q = open_queue(url, schema, queue, options).await?;
    run_store_on(q, items, workers, claim).await
}

/// [`run_store`] on a queue already open (a bounded one, say).
pub async fn run_store_on(
    q: PgQueue<Vec<u8>>,
    items: u64,
    workers: usize,
    claim: usize,
) -> Result<StoreReport, BenchError> {
    let acked = Arc::new(AtomicU64::new(0));
    let ready = Arc::new(Barrier::new(workers + 1));
    let mut handles = Vec::with_capacity(workers);
    for _ in 0..workers {
        let (q, acked, ready) = (q.clone(), acked.clone(), ready.clone());
        handles.push(tokio::spawn(async move {
            ready.wait().await;
            work(q, claim, acked, items, None).await
        }));
    }
    ready.wait().await;
    let start = Instant::now();
    let pushed = push_range(&q, 0, items).await;
    if pushed.is_err() {
        q.close();
    }
    let mut end = start;
    for h in handles {
        end = end.max(h.await??.unwrap_or(start));
    }
    pushed?;
    check_drained(&q, items).await?;
    Ok(StoreReport::new(items, end - start))
}

/// A [`PgPool`] of `workers` workers with a no-op async handler over `queue` (empty) in
/// `schema`, the store's [`Options::prefetch`] `prefetch` and the pool's
/// `PoolBuilder::prefetch` `pool_prefetch` (`None`: its default), fed by one producer pushing `items` in batches of [`PUSH_BATCH`]. Timed until
/// every item is handled and the pool is shut down.
pub async fn run_pool(
    url: &str,
    schema: &str,
    queue: &str,
    items: u64,
    workers: usize,
    prefetch: usize,
    pool_prefetch: Option<usize>,
) -> Result<StoreReport, BenchError> {
    let options = Options::new().prefetch(prefetch);
    run_pool_with(url, schema, queue, items, workers, options, pool_prefetch).await
}

/// [`run_pool`] on a store opened with `options` (the record of finished jobs on, say).
pub async fn run_pool_with(
    url: &str,
    schema: &str,
    queue: &str,
    items: u64,
    workers: usize,
    options: Options,
    pool_prefetch: Option<usize>,
) -> Result<StoreReport, BenchError> {
    let q = open_queue(url, schema, queue, options).await?;
    let handled = Arc::new(AtomicU64::new(0));
    let all = Arc::new(Notify::new());
    let start = Instant::now();
    let mut builder = PgPool::builder(q.clone()).workers(workers);
    if let Some(n) = pool_prefetch {
        builder = builder.prefetch(n);
    }
    let pool: PgPool<Vec<u8>> = builder.spawn({
        let (handled, all) = (handled.clone(), all.clone());
        move |_job: Job<Vec<u8>>| {
            if handled.fetch_add(1, Ordering::AcqRel) + 1 == items {
                all.notify_one();
            }
            async { Ok(()) }
        }
    });
    push_range(&q, 0, items).await?;
    all.notified().await;
    let report = pool.shutdown(Duration::from_secs(30)).await;
    let elapsed = start.elapsed();
    if report.stats.ok != items {
        return Err(format!("pool handled {} of {items}", report.stats.ok).into());
    }
    check_drained(&q, items).await?;
    Ok(StoreReport::new(items, elapsed))
}

/// Drops `schema` (and every queue in it), so that the next open creates it afresh.
pub async fn drop_schema(url: &str, schema: &str) -> Result<(), BenchError> {
    let (client, conn) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(conn);
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
        .await?;
    Ok(())
}

/// CPU time of every PostgreSQL process on this machine so far (Linux, a server on the
/// same machine): user plus system time of each process named `postgres`, plus the time
/// of the children they reaped (so that backends which exited still count). Includes
/// whatever other clients of the server ran meanwhile. `None` without `/proc`.
pub fn server_cpu_time() -> Option<Duration> {
    let mut ticks = 0u64;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        if &stat[open + 1..close] != "postgres" {
            continue;
        }
        // utime, stime, cutime, cstime: fields 14 to 17, 11 to 14 after the name.
        let fields: Vec<&str> = stat[close + 2..].split_whitespace().collect();
        ticks += (11..15)
            .filter_map(|i| fields.get(i)?.parse::<u64>().ok())
            .sum::<u64>();
    }
    // Clock ticks; USER_HZ is 100 on every mainstream configuration.
    Some(Duration::from_millis(ticks * 10))
}
