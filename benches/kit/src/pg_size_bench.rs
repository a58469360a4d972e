//! The leaseq-postgres store's items table measured: its size with `live` items waiting,
//! then after `flow` more items were pushed and acked through the store (the workers of
//! [`crate::pg_store_bench`]) while about `live` stay waiting, with the store's upkeep as
//! the given [`Options`] set it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leaseq_postgres::{Options, Upkeep};
use tokio_postgres::NoTls;

use crate::pg_bare::PUSH_BATCH;
use crate::pg_store_bench::{
    drop_schema, open_queue, push_range, unique, work, BenchError, StoreReport,
};

/// Sizes of the items table, in bytes, and its tuple counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableSize {
    /// `pg_total_relation_size`: heap, indexes and TOAST.
    pub total: i64,
    /// The heap alone (`pg_relation_size`).
    pub heap: i64,
    /// The indexes (`pg_indexes_size`).
    pub indexes: i64,
    /// Rows in the table now.
    pub rows: i64,
    /// Dead tuples as the statistics collector counts them (`n_dead_tup`).
    pub dead_tuples: i64,
    /// `VACUUM`s run on the table (`vacuum_count`: manual ones, the store's included).
    pub vacuums: i64,
}

/// The size of `schema`'s items table now.
pub async fn measure(url: &str, schema: &str) -> Result<TableSize, BenchError> {
    let (client, conn) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(conn);
    let t = format!("\"{schema}\".items");
    // The statistics are sent at the end of each transaction, at most every 1 s (PG 15).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let r = client
        .query_one(
            &format!(
                "SELECT pg_total_relation_size($1::text::regclass), pg_relation_size($1::text::regclass),
                        pg_indexes_size($1::text::regclass), (SELECT count(*) FROM {t}),
                        s.n_dead_tup, s.vacuum_count
                 FROM pg_stat_user_tables s WHERE s.relid = $1::text::regclass"
            ),
            &[&t],
        )
        .await?;
    Ok(TableSize {
        total: r.get(0),
        heap: r.get(1),
        indexes: r.get(2),
        rows: r.get(3),
        dead_tuples: r.get(4),
        vacuums: r.get(5),
    })
}

/// Each index of `schema`'s items table: name, bytes, entries as last counted.
pub async fn index_sizes(url: &str, schema: &str) -> Result<Vec<(String, i64, f64)>, BenchError> {
    let (client, conn) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(conn);
    let rows = client
        .query(
            "SELECT c.relname::text, pg_relation_size(c.oid), c.reltuples::float8
             FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
             WHERE i.indrelid = $1::text::regclass ORDER BY 1",
            &[&format!("\"{schema}\".items")],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect())
}

/// What [`table_size`] measured.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeReport {
    /// A fresh table with `live` items waiting.
    pub with_live: TableSize,
    /// After `flow` more items were pushed and acked, `live` still waiting.
    pub after_flow: TableSize,
    /// How long the flow took.
    pub flow: StoreReport,
    /// The `VACUUM`s and index rebuilds the store ran.
    pub upkeep: Upkeep,
    /// Each index after the flow: name, bytes, live entries (as the last `ANALYZE` or
    /// `VACUUM` counted them).
    pub indexes: Vec<(String, i64, f64)>,
}

/// On a fresh `schema` (dropped first): pushes `live` items and measures the table; then a
/// producer pushes `flow` more while `workers` workers receive `claim` at a time and ack,
/// the producer keeping at most about `live` items waiting, the workers acking exactly
/// `flow` (so `live` are left); then measures again. `options` set the store's VACUUM.
pub async fn table_size(
    url: &str,
    schema: &str,
    options: Options,
    live: u64,
    flow: u64,
    workers: usize,
    claim: usize,
) -> Result<SizeReport, BenchError> {
    drop_schema(url, schema).await?;
    let q = open_queue(url, schema, &unique("size"), options).await?;
    push_range(&q, 0, live).await?;
    let with_live = measure(url, schema).await?;
    let acked = Arc::new(AtomicU64::new(0));
    let budget = Arc::new(AtomicU64::new(flow));
    let start = Instant::now();
    let mut handles = Vec::with_capacity(workers);
    let failed = Arc::new(AtomicBool::new(false));
    for _ in 0..workers {
        let w = work(
            q.clone(),
            claim,
            acked.clone(),
            u64::MAX,
            Some(budget.clone()),
        );
        let failed = failed.clone();
        handles.push(tokio::spawn(async move {
            let r = w.await;
            failed.fetch_or(r.is_err(), Ordering::AcqRel);
            r
        }));
    }
    let mut pushed = live;
    while pushed < live + flow {
        if failed.load(Ordering::Acquire) {
            break; // a worker failed: its error is returned below
        }
        // Keep about `live` waiting: push only while the backlog leaves room for the batch.
        let to = (pushed + PUSH_BATCH as u64).min(live + flow);
        if to - acked.load(Ordering::Acquire) > live {
            tokio::time::sleep(Duration::from_millis(1)).await;
            continue;
        }
        push_range(&q, pushed, to).await?;
        pushed = to;
    }
    let mut end = start;
    for h in handles {
        end = end.max(h.await??.unwrap_or(start));
    }
    let after_flow = measure(url, schema).await?;
    if after_flow.rows != live as i64 {
        return Err(format!("{} rows left, {live} expected", after_flow.rows).into());
    }
    Ok(SizeReport {
        with_live,
        after_flow,
        flow: StoreReport::new(flow, end - start),
        upkeep: q.store().upkeep(),
        indexes: index_sizes(url, schema).await?,
    })
}
