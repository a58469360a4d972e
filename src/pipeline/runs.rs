//! The leaseq throughput rows, the same code on every store: one producer task pushing
//! `items` 16-byte payloads in awaited batches of [`PUSH_BATCH`], and [`CONSUMERS`]
//! consumers of one [`Consumer`] kind. The clock runs from just before the first push to the
//! end of the last settle (for the pool: until every item is handled and the pool is shut
//! down). The queue given must be empty; opening it is outside the clock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leaseq_async::{Job, LeaseQueue, Pool, Runtime, Store};
use tokio::sync::Notify;

use super::{payload, payload_ok, BenchError, CONSUMERS, PUSH_BATCH};

/// How the consumers take and settle their items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consumer {
    /// A [`Pool`] of [`CONSUMERS`] workers with a no-op async handler, its prefetch at the
    /// default.
    Pool,
    /// The same with this prefetch ([`PoolBuilder::prefetch`](leaseq_async::PoolBuilder::prefetch)).
    PoolPrefetch(usize),
    /// `receive()` then `ack().await`, one item at a time.
    Single,
    /// `receive()` then `ack_nowait()`, one item at a time: the ack completes in the
    /// background; each consumer awaits its acks' outcomes at the end (inside the clock).
    SingleNowait,
    /// As [`SingleNowait`](Self::SingleNowait) from a [`LeaseQueue::consumer`] with this
    /// prefetch (each consumer its own, stopped once it has taken its share).
    Prefetch(usize),
    /// `receive_batch(n)` then `ack_batch`.
    Batch(usize),
}

/// Whether this build has the non-waiting ack ([`Consumer::SingleNowait`],
/// [`Consumer::Prefetch`]); their rows are "n/a" otherwise.
pub const NOWAIT: bool = true;

/// A queue of 16-byte payloads on store `S`.
pub type BytesQueue<R, S> = LeaseQueue<Vec<u8>, R, S>;

/// Pushes payloads `0..items` in batches of [`PUSH_BATCH`], each awaited.
pub async fn produce<R, S>(q: &BytesQueue<R, S>, items: u64) -> Result<(), BenchError>
where
    R: Runtime,
    S: Store<Vec<u8>, Runtime = R>,
{
    let mut next = 0;
    while next < items {
        let n = (items - next).min(PUSH_BATCH as u64);
        q.push_batch((next..next + n).map(payload))
            .await
            .map_err(|e| format!("push: {e}"))?;
        next += n;
    }
    Ok(())
}

/// What one run measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outcome {
    /// From the first push to the last settle.
    pub took: Duration,
    /// Items handed to a consumer at an attempt other than 1 (each was still handled once:
    /// a second delivery of a handled item would fail its settle, and the run).
    pub again: u64,
}

/// Runs one row on `q` (empty): pushes `items` while the consumers of kind `how` take and
/// settle them.
///
/// # Errors
///
/// A push that failed, an item mangled, a settle refused or failed.
pub async fn run<R, S>(
    q: BytesQueue<R, S>,
    items: u64,
    how: Consumer,
) -> Result<Outcome, BenchError>
where
    R: Runtime,
    R::Task: Sync,
    S: Store<Vec<u8>, Runtime = R>,
{
    match how {
        Consumer::Pool => return pool_with(q, items, CONSUMERS, None, no_op).await,
        Consumer::PoolPrefetch(n) => return pool_with(q, items, CONSUMERS, Some(n), no_op).await,
        _ => {}
    }
    // Each consumer reserves items from the budget before it receives them, so that the
    // consumers settle exactly `items` between them and none waits for an item that will
    // never come (the queue stays open: closing it is not part of the measurement).
    let budget = Arc::new(AtomicU64::new(items));
    let again = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(CONSUMERS);
    for _ in 0..CONSUMERS {
        let (q, budget, again) = (q.clone(), budget.clone(), again.clone());
        tasks.push(tokio::spawn(async move {
            match how {
                Consumer::Batch(n) => batch_consumer(q, budget, again, n).await,
                _ => single_consumer(q, budget, again, how).await,
            }
        }));
    }
    let pushed = produce(&q, items).await;
    let mut end = start;
    let mut settled = 0;
    let mut first_error = pushed.err();
    for t in tasks {
        match t.await.map_err(|e| format!("a consumer panicked: {e}"))? {
            Ok((n, last)) => {
                settled += n;
                end = end.max(last.unwrap_or(start));
            }
            Err(e) => first_error = first_error.or(Some(e)),
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    if settled != items {
        return Err(format!("{how:?}: settled {settled} of {items}").into());
    }
    Ok(Outcome {
        took: end - start,
        again: again.load(Ordering::Acquire),
    })
}

/// Takes up to `want` items from the budget; how many it took.
fn reserve(budget: &AtomicU64, want: u64) -> u64 {
    let before = budget
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
            Some(left - left.min(want))
        })
        .unwrap_or(0);
    before.min(want)
}

/// One item at a time, the ack awaited ([`Consumer::Single`]) or not
/// ([`Consumer::SingleNowait`], [`Consumer::Prefetch`]). Returns the items it settled and
/// when it finished.
async fn single_consumer<R, S>(
    q: BytesQueue<R, S>,
    budget: Arc<AtomicU64>,
    again: Arc<AtomicU64>,
    how: Consumer,
) -> Result<(u64, Option<Instant>), BenchError>
where
    R: Runtime,
    R::Task: Sync,
    S: Store<Vec<u8>, Runtime = R>,
{
    let prefetching = match how {
        Consumer::Prefetch(n) => Some(q.consumer(n)),
        _ => None,
    };
    let mut settling = Vec::new();
    let mut settled = 0;
    let mut last = None;
    while reserve(&budget, 1) == 1 {
        let d = match &prefetching {
            Some(c) => c.receive().await,
            None => q.receive().await,
        };
        let d = d.ok_or("the queue closed")?;
        if !payload_ok(d.item()) {
            return Err(format!("item {:?} mangled", d.id()).into());
        }
        again.fetch_add(u64::from(d.attempt() != 1), Ordering::AcqRel);
        if how == Consumer::Single {
            d.ack().await.map_err(|e| format!("ack: {e:?}"))?;
            last = Some(Instant::now());
        } else {
            settling.push(d.ack_nowait());
        }
        settled += 1;
    }
    // What it leased ahead goes back now, for the consumers still taking their share.
    if let Some(c) = prefetching {
        c.stop().await;
    }
    for s in settling {
        s.await.map_err(|e| format!("ack_nowait: {e:?}"))?;
        last = Some(Instant::now());
    }
    Ok((settled, last))
}

/// `receive_batch(claim)` then `ack_batch`. Returns the items it settled and when it
/// finished.
async fn batch_consumer<R, S>(
    q: BytesQueue<R, S>,
    budget: Arc<AtomicU64>,
    again: Arc<AtomicU64>,
    claim: usize,
) -> Result<(u64, Option<Instant>), BenchError>
where
    R: Runtime,
    S: Store<Vec<u8>, Runtime = R>,
{
    let mut settled = 0;
    let mut last = None;
    loop {
        let want = reserve(&budget, claim as u64);
        if want == 0 {
            return Ok((settled, last));
        }
        let batch = q.receive_batch(want as usize).await;
        if batch.is_empty() {
            return Err("the queue closed".into());
        }
        let n = batch.len() as u64;
        budget.fetch_add(want - n, Ordering::AcqRel);
        if let Some(d) = batch.iter().find(|d| !payload_ok(d.item())) {
            return Err(format!("item {:?} mangled", d.id()).into());
        }
        let n_again = batch.iter().filter(|d| d.attempt() != 1).count();
        again.fetch_add(n_again as u64, Ordering::AcqRel);
        let r = q.ack_batch(batch).await;
        if r.accepted() as u64 != n {
            return Err(format!("ack_batch: {:?} {:?}", r.stale(), r.failed()).into());
        }
        settled += n;
        last = Some(Instant::now());
    }
}

/// The no-op handler of the pool rows.
async fn no_op(_: Vec<u8>) -> Result<(), leaseq_async::JobError> {
    Ok(())
}

/// A [`Pool`] of `workers` workers running `handler` on each item, with `prefetch` (the
/// pool's default if `None`), fed by [`produce`]; the clock runs from just before the pool
/// starts until every item is handled and the pool is shut down (its settles done). Fails
/// if an item came mangled, or the pool did not count `items` ok.
pub async fn pool_with<R, S, H, F>(
    q: BytesQueue<R, S>,
    items: u64,
    workers: usize,
    prefetch: Option<usize>,
    handler: H,
) -> Result<Outcome, BenchError>
where
    R: Runtime,
    S: Store<Vec<u8>, Runtime = R>,
    H: Fn(Vec<u8>) -> F + Send + Sync + 'static,
    F: std::future::Future<Output = Result<(), leaseq_async::JobError>> + Send + 'static,
{
    let handled = Arc::new(AtomicU64::new(0));
    let bad = Arc::new(AtomicU64::new(0));
    let again = Arc::new(AtomicU64::new(0));
    let all = Arc::new(Notify::new());
    let start = Instant::now();
    let mut builder = Pool::builder(q.clone()).workers(workers);
    if let Some(n) = prefetch {
        builder = builder.prefetch(n);
    }
    let pool = builder.spawn({
        let (handled, bad, all) = (handled.clone(), bad.clone(), all.clone());
        let again = again.clone();
        move |job: Job<Vec<u8>>| {
            bad.fetch_add(u64::from(!payload_ok(&job.item)), Ordering::AcqRel);
            again.fetch_add(u64::from(job.attempt != 1), Ordering::AcqRel);
            if handled.fetch_add(1, Ordering::AcqRel) + 1 == items {
                all.notify_one();
            }
            handler(job.item)
        }
    });
    produce(&q, items).await?;
    all.notified().await;
    let report = pool.shutdown(Duration::from_secs(60)).await;
    let took = start.elapsed();
    let bad = bad.load(Ordering::Acquire);
    if report.stats.ok != items || bad != 0 {
        return Err(format!(
            "pool: {} of {items} ok, {bad} mangled, {} stale and {} failed settles",
            report.stats.ok, report.stats.stale_settles, report.stats.failed_settles
        )
        .into());
    }
    Ok(Outcome {
        took,
        again: again.load(Ordering::Acquire),
    })
}
