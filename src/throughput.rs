//! End-to-end throughput: one producer, several consumers, leaseq against plain channels.
//!
//! leaseq does push -> receive -> ack (each item settled); the channels do send -> receive
//! only, since they have nothing to settle. Every function runs on a [`Runtime`], so the same
//! code measures tokio and smol.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leaseq_async::{Config, LeaseQueue, Runtime};

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
