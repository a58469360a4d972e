//! What flow control costs on Postgres (issue 32, `examples/pg_flow_bench.rs`): rounds of
//! a backlog pushed before the clock and drained by `PgPool`s of 4 (no-op handler), per
//! round and in an order that rotates:
//! - **plain**: one store, no flow control (the baseline of the grouped run);
//! - **two stores**: two stores (two "processes": each its own pool of connections,
//!   claimer and settler) on one queue, a pool each, no limit;
//! - **two stores, limit 64**: the same with a queue-wide concurrency limit of 64 (it
//!   binds: each pool leases up to 36 ahead of its 4 workers, a prefetch of 32; every
//!   claim goes through the queue's slots). Goal: >= 0.8 x **two stores** (River #1145:
//!   halved);
//! - **groups**: the backlog in `groups` ordered groups (`per` items each, pushed group by
//!   group), one store. Goal: >= 0.5 x **plain**.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leaseq_async::core::LimitScope;
use leaseq_async::{Job, Push};
use leaseq_postgres::{Options, PgPool, PgQueue};
use tokio::sync::Notify;

use crate::pg_store_bench::{open_queue, push_range, BenchError};

/// The settings of a round, in [`FlowRound`]'s order.
pub const SETTINGS: [&str; 4] = ["plain", "two stores", "two stores, limit 64", "groups"];

/// One round: items/s of each setting.
pub type FlowRound = [f64; 4];

/// The goals: limit 64 against two stores, groups against plain.
pub const GOALS: [f64; 2] = [0.8, 0.5];

/// Drains `items` already pushed to `queue` with a pool of 4 on each of `stores`; items/s.
async fn drain(stores: &[PgQueue<Vec<u8>>], items: u64) -> Result<f64, BenchError> {
    let handled = Arc::new(AtomicU64::new(0));
    let all = Arc::new(Notify::new());
    let start = Instant::now();
    let pools: Vec<PgPool<Vec<u8>>> = stores
        .iter()
        .map(|q| {
            let (handled, all) = (handled.clone(), all.clone());
            PgPool::builder(q.clone())
                .workers(4)
                .spawn(move |_job: Job<Vec<u8>>| {
                    if handled.fetch_add(1, Ordering::AcqRel) + 1 == items {
                        all.notify_one();
                    }
                    async { Ok(()) }
                })
        })
        .collect();
    all.notified().await;
    let elapsed = start.elapsed();
    for pool in pools {
        pool.shutdown(Duration::from_secs(30)).await;
    }
    Ok(items as f64 / elapsed.as_secs_f64())
}

/// Pushes `groups` x `per` items, group by group, each with its group key (64 pushes
/// awaited at once, which the writer batches).
async fn push_groups(q: &PgQueue<Vec<u8>>, groups: u64, per: u64) -> Result<(), BenchError> {
    let next = Arc::new(AtomicU64::new(0));
    let total = groups * per;
    let tasks: Vec<_> = (0..64)
        .map(|_| {
            let (q, next) = (q.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        return Ok::<(), String>(());
                    }
                    let push = Push::new().group(format!("g{}", i / per));
                    q.push_with(i.to_le_bytes().to_vec(), push)
                        .await
                        .map_err(|e| format!("push: {e:?}"))?;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    Ok(())
}

/// One setting's run on a fresh queue named `queue`.
async fn run(
    url: &str,
    schema: &str,
    setting: usize,
    queue: &str,
    items: u64,
    per: u64,
) -> Result<f64, BenchError> {
    let q = open_queue(url, schema, queue, Options::new()).await?;
    let mut stores = vec![q.clone()];
    if setting == 1 || setting == 2 {
        stores.push(open_queue(url, schema, queue, Options::new()).await?);
    }
    if setting == 2 {
        q.set_limit(LimitScope::Queue, Some(64)).await?;
    }
    let items = if setting == 3 {
        let groups = (items / per).max(1);
        push_groups(&q, groups, per).await?;
        groups * per
    } else {
        push_range(&q, 0, items).await?;
        items
    };
    let rate = drain(&stores, items).await?;
    // Closed before the next setting (and the schema's drop at the end), so that no store's
    // background statement is left running against the tables being dropped (a deadlock
    // with `DROP SCHEMA` otherwise, once in about 20 runs).
    for s in &stores {
        s.close().await.map_err(|e| format!("close: {e:?}"))?;
    }
    Ok(rate)
}

/// Runs `rounds` rounds of every setting on `items` items (`per` to a group), after a
/// discarded warm-up of each, each run on a queue of its own in `schema`.
pub async fn run_flow_rounds(
    url: &str,
    schema: &str,
    rounds: usize,
    items: u64,
    per: u64,
) -> Result<Vec<FlowRound>, BenchError> {
    for s in 0..SETTINGS.len() {
        run(
            url,
            schema,
            s,
            &format!("bench-flow-warm-{s}"),
            items / 10,
            per,
        )
        .await?;
    }
    let mut out = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let mut r = [0.0; 4];
        for k in 0..SETTINGS.len() {
            let s = (k + round) % SETTINGS.len();
            r[s] = run(
                url,
                schema,
                s,
                &format!("bench-flow-{round}-{s}"),
                items,
                per,
            )
            .await?;
        }
        out.push(r);
    }
    Ok(out)
}
