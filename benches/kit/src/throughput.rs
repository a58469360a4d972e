//! End-to-end throughput: one producer, several consumers, leaseq against plain channels.
//!
//! leaseq does push -> receive -> ack (each item settled); the channels do send -> receive
//! only, since they have nothing to settle. [`pool`] runs a leaseq [`Pool`] with a no-op
//! handler against [`flume_handler`], flume consumers awaiting the same no-op. Every function runs on a [`Runtime`], so the same
//! code measures tokio and smol.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leaseq_async::{Config, ItemTimeout, Job, JobError, LeaseQueue, Pool, PoolBuilder, Runtime};

/// Spawns `f` and returns a joinable task.
fn spawn<R: Runtime>(rt: &R, f: impl std::future::Future<Output = ()> + Send + 'static) -> R::Task {
    rt.spawn(Box::pin(f))
}

/// leaseq: one producer pushes `items` (in chunks of `batch` when `batch > 1`), `consumers`
/// tasks receive and ack them (batches of up to `batch`). Returns the wall time.
pub async fn leaseq<R: Runtime>(rt: R, items: u64, consumers: usize, batch: usize) -> Duration {
    let config = Config::new(Duration::from_secs(60)).with_max_attempts(u32::MAX);
    let queue: LeaseQueue<u64, R> =
        LeaseQueue::with_runtime(rt.clone(), config).expect("valid config");
    let done = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..consumers {
        let q = queue.clone();
        let done = done.clone();
        tasks.push(spawn(&rt, async move {
            loop {
                if batch <= 1 {
                    let Some(d) = q.receive().await else { break };
                    d.ack().await.expect("fresh lease");
                    if done.fetch_add(1, Ordering::AcqRel) + 1 == items {
                        q.close();
                    }
                } else {
                    let ds = q.receive_batch(batch).await;
                    if ds.is_empty() {
                        break;
                    }
                    let n = q.ack_batch(ds).await.accepted() as u64;
                    if done.fetch_add(n, Ordering::AcqRel) + n == items {
                        q.close();
                    }
                }
            }
        }));
    }
    let q = queue.clone();
    tasks.push(spawn(&rt, async move {
        if batch <= 1 {
            for i in 0..items {
                q.try_push(i).expect("open, unbounded");
            }
        } else {
            let mut i = 0;
            while i < items {
                let end = (i + batch as u64).min(items);
                q.try_push_batch(i..end).expect("open, unbounded");
                i = end;
            }
        }
    }));
    for t in tasks {
        t.await;
    }
    assert_eq!(done.load(Ordering::Acquire), items, "every item acked");
    start.elapsed()
}

/// flume: one producer sends `items`, `consumers` tasks receive them.
pub async fn flume<R: Runtime>(rt: R, items: u64, consumers: usize) -> Duration {
    let (tx, rx) = flume::unbounded::<u64>();
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..consumers {
        let rx = rx.clone();
        tasks.push(spawn(&rt, async move {
            while let Ok(x) = rx.recv_async().await {
                std::hint::black_box(x);
            }
        }));
    }
    tasks.push(spawn(&rt, async move {
        for i in 0..items {
            tx.send(i).expect("receivers alive");
        }
    }));
    for t in tasks {
        t.await;
    }
    start.elapsed()
}

/// flume with a handler: one producer sends `items`, `consumers` tasks receive them and
/// await a no-op async handler on each, the baseline of [`pool`].
pub async fn flume_handler<R: Runtime>(rt: R, items: u64, consumers: usize) -> Duration {
    let (tx, rx) = flume::unbounded::<u64>();
    let handler = |x: u64| async move {
        std::hint::black_box(x);
        Ok::<(), JobError>(())
    };
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..consumers {
        let rx = rx.clone();
        tasks.push(spawn(&rt, async move {
            while let Ok(x) = rx.recv_async().await {
                handler(x).await.expect("no-op");
            }
        }));
    }
    tasks.push(spawn(&rt, async move {
        for i in 0..items {
            tx.send(i).expect("receivers alive");
        }
    }));
    for t in tasks {
        t.await;
    }
    start.elapsed()
}

/// A [`Pool`] of `workers` workers with a no-op async handler: one producer task pushes
/// `items`, and the time runs from starting the pool until every item is acked
/// ([`LeaseQueue::wait_empty`]) and the pool is shut down (its workers joined), as
/// [`flume_handler`]'s runs until its consumers are joined.
pub async fn pool<R: Runtime>(rt: R, items: u64, workers: usize) -> Duration {
    pool_with(rt, items, workers, |b| b).await
}

/// [`pool`] with its safe defaults turned off: no item timeout, no heartbeat, no watchdog.
/// Not a configuration to run: beside [`pool`], it measures what those defaults cost per
/// item.
pub async fn pool_bare<R: Runtime>(rt: R, items: u64, workers: usize) -> Duration {
    pool_with(rt, items, workers, |b| {
        b.item_timeout(ItemTimeout::None)
            .heartbeat(false)
            .no_watchdog()
    })
    .await
}

async fn pool_with<R: Runtime>(
    rt: R,
    items: u64,
    workers: usize,
    shape: impl FnOnce(PoolBuilder<u64, R>) -> PoolBuilder<u64, R>,
) -> Duration {
    let config = Config::new(Duration::from_secs(60)).with_max_attempts(u32::MAX);
    let queue: LeaseQueue<u64, R> =
        LeaseQueue::with_runtime(rt.clone(), config).expect("valid config");
    let start = Instant::now();
    let pool = shape(Pool::builder(queue.clone()).workers(workers))
        .spawn(|_job: Job<u64>| async { Ok(()) });
    let q = queue.clone();
    spawn(&rt, async move {
        for i in 0..items {
            q.try_push(i).expect("open, unbounded");
        }
    })
    .await;
    queue.wait_empty().await;
    let report = pool.shutdown(Duration::from_secs(10)).await;
    let took = start.elapsed();
    assert_eq!(report.stats.ok, items, "every item handled once");
    took
}

/// async-channel: one producer sends `items`, `consumers` tasks receive them.
pub async fn async_channel<R: Runtime>(rt: R, items: u64, consumers: usize) -> Duration {
    let (tx, rx) = async_channel::unbounded::<u64>();
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..consumers {
        let rx = rx.clone();
        tasks.push(spawn(&rt, async move {
            while let Ok(x) = rx.recv().await {
                std::hint::black_box(x);
            }
        }));
    }
    tasks.push(spawn(&rt, async move {
        for i in 0..items {
            tx.try_send(i).expect("unbounded, receivers alive");
        }
    }));
    for t in tasks {
        t.await;
    }
    start.elapsed()
}

/// tokio mpsc with the receiver behind a mutex (its only way to have several consumers).
pub async fn tokio_mpsc<R: Runtime>(rt: R, items: u64, consumers: usize) -> Duration {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<u64>();
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..consumers {
        let rx = rx.clone();
        tasks.push(spawn(&rt, async move {
            loop {
                let next = rx.lock().await.recv().await;
                match next {
                    Some(x) => {
                        std::hint::black_box(x);
                    }
                    None => break,
                }
            }
        }));
    }
    tasks.push(spawn(&rt, async move {
        for i in 0..items {
            tx.send(i).expect("receiver alive");
        }
    }));
    for t in tasks {
        t.await;
    }
    start.elapsed()
}

/// Items per second.
pub fn rate(items: u64, took: Duration) -> f64 {
    items as f64 / took.as_secs_f64()
}

/// A smol runtime on an executor of its own, run by `threads` threads (the benchmarks use
/// one per core). `SmolRuntime::global()` spawns on smol's global executor, which has one
/// thread unless `SMOL_THREADS` says otherwise; this keeps the smol rows on as many threads
/// as tokio's.
pub fn smol_runtime(threads: usize) -> leaseq_smol::SmolRuntime {
    let ex = Arc::new(smol::Executor::new());
    for i in 0..threads.max(1) {
        let ex = ex.clone();
        std::thread::Builder::new()
            .name(format!("bench-smol-{i}"))
            .spawn(move || smol::block_on(ex.run(std::future::pending::<()>())))
            .expect("spawn an executor thread");
    }
    leaseq_smol::SmolRuntime::with_executor(ex)
}

/// The number of cores (`available_parallelism`), at least 1.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
