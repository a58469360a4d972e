//! Claims whatever the statistics say: rounds of the leaseq-postgres store draining a
//! backlog, alternating two states of the planner's statistics in which a claim planned for
//! what the statistics say would sort the whole backlog each time (BENCHMARKS.md, round 2,
//! issue 10: "Collapses"):
//!
//! - **fresh**: a queue name no round used, in the same table (its rows are not in the
//!   statistics);
//! - **refilled**: one queue name for every such round, drained at the end of its previous
//!   round, the table then `VACUUM ANALYZE`d while empty (so `pg_class.reltuples` = 0: the
//!   planner expects an empty table) and refilled.
//!
//! A round pushes `items` items of 16 bytes (committed, before the clock, while no upkeep
//! runs: the stores' advisory lock is held), then `workers`
//! workers `receive_batch(claim)` + `ack_batch` until all are acked; the clock runs from the
//! workers' start to the last ack. The queue is opened (default [`Options`]: the store's own
//! `VACUUM` every 5,000 rows removed runs as usual) for each round and checked drained at
//! its end. A collapse shows as a round far below the median.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

use leaseq_postgres::Options;
use tokio::sync::Barrier;
use tokio_postgres::NoTls;

use crate::pg_store_bench::{check_drained, open_queue, push_range, unique, work, BenchError};

/// The two states a round starts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// A new queue name in the used table.
    Fresh,
    /// The long-lived queue, drained, its table `VACUUM ANALYZE`d empty, then refilled.
    Refilled,
}

/// What one round measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RefillRound {
    /// The state it started in.
    pub start: Start,
    /// `pg_class.reltuples` of the items table when the workers started.
    pub reltuples: f64,
    /// Items acked per second, from the workers' start to the last ack.
    pub items_per_sec: f64,
}

/// `pg_class.reltuples` of `schema`'s items table.
async fn reltuples(client: &tokio_postgres::Client, schema: &str) -> Result<f64, BenchError> {
    let row = client
        .query_one(
            "SELECT reltuples::float8 FROM pg_class WHERE oid = $1::text::regclass",
            &[&format!("\"{schema}\".items")],
        )
        .await?;
    Ok(row.get(0))
}

/// Runs `rounds` rounds, odd ones fresh and even ones refilled (the first fresh), each
/// reported to `each` as it ends.
pub async fn run_refill_rounds(
    url: &str,
    schema: &str,
    rounds: usize,
    items: u64,
    workers: usize,
    claim: usize,
    mut each: impl FnMut(usize, &RefillRound),
) -> Result<Vec<RefillRound>, BenchError> {
    let (db, conn) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(conn);
    let long_lived = unique("bench-refill");
    let mut out = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let start = if i % 2 == 0 {
            Start::Fresh
        } else {
            Start::Refilled
        };
        let queue = match start {
            Start::Fresh => unique("bench-fresh"),
            Start::Refilled => long_lived.clone(),
        };
        let q = open_queue(url, schema, &queue, Options::new()).await?;
        // The stores' own upkeep (a `VACUUM (ANALYZE)` after every 5,000 rows removed) takes
        // this lock: held from here to the workers' start, no upkeep of an earlier round
        // runs meanwhile (two `ANALYZE`s at once fail) or counts the refill.
        let key = format!("leaseq.vacuum.{schema}");
        // Tried, not waited for in a statement: a `REINDEX CONCURRENTLY` under the lock waits
        // for every transaction, the waiting one included (a deadlock).
        while !db
            .query_one("SELECT pg_try_advisory_lock(hashtext($1))", &[&key])
            .await?
            .get::<_, bool>(0)
        {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        if start == Start::Refilled {
            // Every queue of the table is drained: the statistics will say it is empty.
            db.batch_execute(&format!("VACUUM ANALYZE \"{schema}\".items"))
                .await?;
        }
        push_range(&q, 0, items).await?;
        let reltuples = reltuples(&db, schema).await?;
        db.execute("SELECT pg_advisory_unlock(hashtext($1))", &[&key])
            .await?;
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
        let began = Instant::now();
        let mut end = began;
        for h in handles {
            end = end.max(h.await??.unwrap_or(began));
        }
        check_drained(&q, items).await?;
        let round = RefillRound {
            start,
            reltuples,
            items_per_sec: items as f64 / (end - began).as_secs_f64(),
        };
        each(i, &round);
        out.push(round);
    }
    Ok(out)
}
