//! Every queue of a schema, or one, with its counts by state, read without a pass over a
//! large table ([`PgInspector::queue_overview`](crate::PgInspector::queue_overview),
//! [`PgInspector::queue_counts`](crate::PgInspector::queue_counts)), for dashboards that
//! redraw them every few seconds. Nothing on the write path: no counter row,
//! no trigger. One `REPEATABLE READ` snapshot for all of it:
//!
//! - **A small table** (at most [`SAMPLE_PAGES`] pages, 3.2 MiB): left to the caller, who
//!   counts it exactly, as [`PgInspector::queues`](crate::PgInspector::queues) does; cheap
//!   at that size.
//! - **A larger one**: first a `TABLESAMPLE SYSTEM` read of about [`SAMPLE_PAGES`] of its
//!   pages, each queue's rows by state counted in it. Then the names, by a loose index scan
//!   of each partial index (`items_claim`, `items_leased`, `items_dead`, all led by
//!   `queue`): one probe for the next name above the last, so 100 queues cost about 300
//!   probes however many rows they hold. Then each (queue, state) counted on its partial
//!   index, stopped at the cap plus one (ready and delayed per priority level, where
//!   `visible_at` bounds the range), except where the sample alone saw more than the cap
//!   (the same snapshot: so many rows are there). A count at or below the cap is exact; one
//!   past it is the sample's, scaled by the pages it did not read, never below the cap
//!   plus one.
//!
//! So a read costs at most queues x 4 x cap index entries (each a heap visit on a page
//! changed since the last vacuum) and the sample, where the `GROUP BY` over every row
//! grew with the table (BENCHMARKS.md, "Overview of 100 queues").

use leaseq_async::StoredCounts;
use tokio_postgres::{Client, Row, Transaction};

use super::PgInspector;
use crate::error::DbError;

/// The pages the estimate samples (8 KiB each: 3.2 MiB), whatever the table's size; a table
/// of at most this many is counted exactly.
pub(crate) const SAMPLE_PAGES: i64 = 400;

impl PgInspector {
    /// Every queue of the schema that has rows, by name, with its rows counted by state,
    /// each count exact up to `cap` and estimated above it
    /// ([`StoredCounts::estimated_above`]): what [`queues`](Self::queues) tells, without its
    /// pass over every row once the table is larger than 3.2 MiB (below that, every count is
    /// exact). The names come from index probes (one per queue and state), each count stops
    /// at `cap` plus one on its partial index, and the counts past `cap` are scaled from a
    /// sample of about 400 of the table's pages; so a read costs at most queues x 4 x
    /// `cap` index entries and the sample, however many rows the queues hold (1,000,000
    /// rows in 100 queues: BENCHMARKS.md). For pages redrawn every few seconds.
    pub async fn queue_overview(&mut self, cap: u64) -> Result<Vec<StoredCounts>, DbError> {
        if !self.exists {
            return Ok(Vec::new());
        }
        let tx = snapshot(&mut self.client).await?;
        let (schema, paused) = (&self.schema, &self.paused_list);
        let counts = match read(&tx, schema, paused, Which::All, cap).await? {
            Some(counts) => counts,
            None => {
                let rows = tx.query(&self.sql.op.queues, &[]).await?;
                rows.iter()
                    .map(|r| counts_of(r, 1).with_paused(r.get(5)))
                    .collect()
            }
        };
        tx.commit().await?;
        Ok(counts)
    }

    /// `queue`'s rows counted by state as [`queue_overview`](Self::queue_overview) counts
    /// them: exact up to `cap`, estimated above it once the table is larger than 3.2 MiB;
    /// what [`counts`](Self::counts) tells, without its pass over the queue's rows.
    pub async fn queue_counts(&mut self, queue: &str, cap: u64) -> Result<StoredCounts, DbError> {
        if !self.exists {
            return Ok(StoredCounts::new(queue, 0, 0, 0, 0));
        }
        let tx = snapshot(&mut self.client).await?;
        let (schema, paused) = (&self.schema, &self.paused_list);
        let one = Which::One(queue);
        let counts = match read(&tx, schema, paused, one, cap).await? {
            Some(mut counts) => counts.pop(),
            None => None,
        };
        let mut counts = match counts {
            Some(c) => c,
            None => {
                let r = tx.query_one(&self.sql.counts, &[&queue]).await?;
                counts_of(&r, 0).with_paused(r.get(4))
            }
        };
        tx.commit().await?;
        counts.queue = queue.to_string();
        Ok(counts)
    }
}

/// Which queues a read counts.
#[derive(Clone, Copy)]
enum Which<'a> {
    /// Every queue with rows.
    All,
    /// This one (listed with its pause flag even without rows).
    One(&'a str),
}

/// The counts by state of `which` queues, each exact up to `cap` and estimated above it,
/// in `tx` (read-only, repeatable read); `None` for a table of at most [`SAMPLE_PAGES`]
/// pages, which the caller counts exactly. `paused` is the pause flag's expression over a
/// queue name `i.queue` (`false` in a schema before pausing).
async fn read(
    tx: &Transaction<'_>,
    schema: &str,
    paused: &str,
    which: Which<'_>,
    cap: u64,
) -> Result<Option<Vec<StoredCounts>>, DbError> {
    let s = format!("\"{schema}\"");
    let pages: i64 = tx
        .query_one(
            "SELECT (pg_relation_size($1::text::regclass)
                     / current_setting('block_size')::bigint)::bigint",
            &[&format!("{s}.items")],
        )
        .await?
        .get(0);
    if pages <= SAMPLE_PAGES {
        return Ok(None);
    }
    // The share of pages read, in percent, as `TABLESAMPLE SYSTEM` takes it.
    let percent = (100.0 * SAMPLE_PAGES as f64 / pages as f64) as f32;
    let sample = sample(&s);
    // Every queue's read samples first (its many counts past the cap are skipped); one
    // queue's counts first (four capped counts), and samples only if one passed the cap.
    let mut sampled: Vec<StoredCounts> = Vec::new();
    if let Which::All = which {
        sampled = tx
            .query(&sample, &[&percent])
            .await?
            .iter()
            .map(counts)
            .collect();
    }
    // Per state, the queues the sample saw more than `cap` rows of: not counted again.
    let over = |state: fn(&StoredCounts) -> u64| -> Vec<&str> {
        sampled
            .iter()
            .filter(|c| state(c) > cap)
            .map(|c| c.queue.as_str())
            .collect()
    };
    let limit = i64::try_from(cap.saturating_add(1)).unwrap_or(i64::MAX);
    let skip = [
        over(|c| c.ready),
        over(|c| c.delayed),
        over(|c| c.in_flight),
        over(|c| c.dead),
    ];
    let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
        vec![&limit, &skip[0], &skip[1], &skip[2], &skip[3]];
    let names = match &which {
        Which::All => names(&s),
        Which::One(queue) => {
            params.push(queue);
            "names(queue) AS (SELECT $6::text)".to_string()
        }
    };
    let sql = capped_counts(&s, &names).replace("{paused}", paused);
    let rows = tx.query(&sql, &params).await?;
    let capped: Vec<StoredCounts> = rows
        .iter()
        .map(|r| counts(r).with_paused(r.get(5)).with_estimated_above(cap))
        .collect();
    if let Which::One(_) = which {
        if capped.iter().any(StoredCounts::has_estimate) {
            sampled = tx
                .query(&sample, &[&percent])
                .await?
                .iter()
                .map(counts)
                .collect();
        }
    }
    let scale = 100.0 / f64::from(percent);
    let estimate = |capped: u64, seen: u64| {
        if capped <= cap {
            capped
        } else {
            ((seen as f64 * scale).round() as u64).max(cap.saturating_add(1))
        }
    };
    Ok(Some(
        capped
            .into_iter()
            .map(|mut c| {
                let seen = sampled.iter().find(|x| x.queue == c.queue);
                let seen = seen.cloned().unwrap_or_default();
                c.ready = estimate(c.ready, seen.ready);
                c.delayed = estimate(c.delayed, seen.delayed);
                c.in_flight = estimate(c.in_flight, seen.in_flight);
                c.dead = estimate(c.dead, seen.dead);
                c
            })
            .collect(),
    ))
}

/// A row's queue (column 0) and counts (columns 1 to 4).
fn counts(r: &Row) -> StoredCounts {
    let n = |i: usize| r.get::<_, i64>(i).max(0) as u64;
    StoredCounts::new(r.get::<_, String>(0), n(1), n(2), n(3), n(4))
}

/// Every queue's name, by loose index scans: the common table `names(queue)`.
fn names(s: &str) -> String {
    let scan = |state: u8| {
        format!(
            "n{state}(queue) AS (
               (SELECT queue FROM {s}.items WHERE state = {state} ORDER BY queue LIMIT 1)
               UNION ALL
               SELECT (SELECT queue FROM {s}.items WHERE state = {state} AND queue > n.queue
                       ORDER BY queue LIMIT 1)
               FROM n{state} n WHERE n.queue IS NOT NULL)"
        )
    };
    format!(
        "{}, {}, {},
         names(queue) AS (SELECT queue FROM n0 WHERE queue IS NOT NULL
                          UNION SELECT queue FROM n1 WHERE queue IS NOT NULL
                          UNION SELECT queue FROM n2 WHERE queue IS NOT NULL)",
        scan(0),
        scan(1),
        scan(2)
    )
}

/// The capped counts of the queues of `names` (common tables ending in `names(queue)`):
/// `$1` the cap plus one, `$2` to `$5` the queues not to count (`$1` instead) in each
/// state: ready, delayed, leased, dead.
fn capped_counts(s: &str, names: &str) -> String {
    let waiting = |cmp: &str, skip: u8| {
        format!(
            "CASE WHEN i.queue = ANY(${skip}::text[]) THEN $1 ELSE
             (SELECT count(*) FROM (SELECT 1 FROM generate_series(0, {max}) AS p(level)
                CROSS JOIN LATERAL (SELECT 1 FROM {s}.items x
                    WHERE x.queue = i.queue AND x.state = 0 AND x.priority = p.level::smallint
                      AND x.visible_at {cmp} statement_timestamp() LIMIT $1) AS w
                LIMIT $1) AS c) END",
            max = leaseq_core::MAX_PRIORITY
        )
    };
    let state = |state: u8, skip: u8| {
        format!(
            "CASE WHEN i.queue = ANY(${skip}::text[]) THEN $1 ELSE
             (SELECT count(*) FROM (SELECT 1 FROM {s}.items x
                WHERE x.queue = i.queue AND x.state = {state} LIMIT $1) AS c) END"
        )
    };
    format!(
        "WITH RECURSIVE {names}
         SELECT i.queue, {ready}, {delayed}, {leased}, {dead}, {{paused}}
         FROM names i ORDER BY i.queue",
        ready = waiting("<=", 2),
        delayed = waiting(">", 3),
        leased = state(1, 4),
        dead = state(2, 5),
    )
}

/// The sampled counts of every queue, `$1` the percent of pages read (every queue: a
/// filter on the names costs more than the groups it saves).
fn sample(s: &str) -> String {
    format!(
        "SELECT queue,
           count(*) FILTER (WHERE state = 0 AND visible_at <= statement_timestamp()),
           count(*) FILTER (WHERE state = 0 AND visible_at > statement_timestamp()),
           count(*) FILTER (WHERE state = 1),
           count(*) FILTER (WHERE state = 2)
         FROM {s}.items TABLESAMPLE SYSTEM ($1) GROUP BY queue"
    )
}

/// `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`: one snapshot for several statements.
async fn snapshot(client: &mut Client) -> Result<tokio_postgres::Transaction<'_>, DbError> {
    Ok(client
        .build_transaction()
        .read_only(true)
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .start()
        .await?)
}

/// The four counts from column `from` on (ready, delayed, leased, dead), of the queue named
/// in column 0 when `from` is 1.
fn counts_of(r: &Row, from: usize) -> StoredCounts {
    let n = |i: usize| r.get::<_, i64>(from + i).max(0) as u64;
    let queue = if from == 1 {
        r.get::<_, String>(0)
    } else {
        String::new()
    };
    StoredCounts::new(queue, n(0), n(1), n(2), n(3))
}
