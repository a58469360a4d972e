//! Keeping the items table small (and forgetting the id watermarks of writers gone for 30
//! days): a `VACUUM (INDEX_CLEANUP ON, TRUNCATE OFF)` (with `ANALYZE` one time in
//! [`ANALYZE_EVERY`]) after many rows
//! were removed, then a rebuild of the indexes that grew far past what their live entries
//! need.
//!
//! Every item leaves dead row versions and dead index entries behind (its claim updates the
//! row, its ack deletes it). `VACUUM` makes the heap's space reusable, and the heap then
//! stays near its live size. The indexes need two more things:
//!
//! - `INDEX_CLEANUP ON`. By default (`AUTO`, PostgreSQL 14 and later) a `VACUUM` that finds
//!   dead items on few heap pages skips the indexes altogether, and a queue's frequent small
//!   `VACUUM`s nearly always do: their emptied pages were never deleted nor recycled, and
//!   after 1M items the indexes had grown to 18x their size at the same live count; forced,
//!   2.9x (BENCHMARKS.md, "Table size").
//! - Rebuilds. The keys only grow (ids, `visible_at`, deadlines): new entries go to the right
//!   edge while pages emptied at the left are recycled only by a later `VACUUM`, so an index
//!   carries a few `VACUUM` periods' worth of pages beside its live entries. A
//!   `REINDEX INDEX CONCURRENTLY` builds an index afresh from the live rows without blocking
//!   pushes, claims or acks, and swaps it in.
//!
//! And one thing less: `TRUNCATE OFF`. A `VACUUM` that finds the table's last pages empty
//! cuts them off under an exclusive lock, which it tries to take for up to 5 s while claims
//! and acks hold their locks (a queue's table keeps emptying and refilling its end), then
//! stalls every claim and ack while it scans back; measured, the upkeep's `VACUUM` spent
//! most of its time in that wait. Emptied pages are reused by the next inserts anyway.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use deadpool_postgres::Client;
use tokio_postgres::Error;

use crate::counters::Counters;
use crate::db::Db;

/// An index is rebuilt when it takes more than this many times the space a fresh build of
/// it would take. (1.5, measured before the index cleanup, rebuilt on nearly every upkeep.)
pub(crate) const REBUILD_FACTOR: f64 = 2.0;

/// One upkeep in this many (the first included) also runs `ANALYZE`. The store's plans do
/// not follow the statistics (lib.rs, "Plans"), and the `VACUUM` itself counts the table's
/// and the indexes' rows for the rebuilds; the sampling took more than the `VACUUM` (26
/// to 36 ms against 18 at 60,000 rows, measured).
pub(crate) const ANALYZE_EVERY: u64 = 8;

/// Indexes smaller than this are never rebuilt (a few pages are no bloat worth the work).
pub(crate) const REBUILD_FLOOR: i64 = 256 * 1024;

/// What a freshly built B-tree index takes per entry, in bytes, when the indexed columns'
/// values average `width` bytes (`pg_stats.avg_width`, summed; `None` before the first
/// `ANALYZE`, then taken as 48): the tuple header (8), the values, 4 bytes of alignment
/// padding on average, the line pointer (4), over leaf pages filled to 90% with their
/// headers and the inner pages (88% in all). Measured against `REINDEX` on a table of
/// 10,000 items: 27.3 estimated for the primary key against 24.6, 73.9 for `items_claim`
/// against 78.6.
pub(crate) fn fresh_bytes_per_entry(width: Option<f64>) -> f64 {
    (8.0 + width.unwrap_or(48.0) + 4.0 + 4.0) / 0.88
}

/// Whether an index of `bytes` holding `entries` live entries (`-1`: never counted) of
/// `width` bytes of values is worth rebuilding.
pub(crate) fn bloated(bytes: i64, entries: f64, width: Option<f64>) -> bool {
    bytes > REBUILD_FLOOR
        && bytes as f64 > entries.max(0.0) * fresh_bytes_per_entry(width) * REBUILD_FACTOR
}

/// Starts the table's upkeep when this process removed enough rows since the last one
/// (checked after every ack batch and driver step): one at a time per process (a due one
/// starts as soon as the running one ends) and per schema (an advisory lock), off the
/// caller's path.
pub(crate) fn vacuum_if_due<T: Send + 'static>(db: &Arc<Db<T>>, counters: &Arc<Counters>) {
    let every = db.options.vacuum_after_rows;
    let c = &**counters;
    if every == 0 || c.removed_since_vacuum.load(Ordering::Relaxed) < every {
        return;
    }
    if c.vacuuming.swap(true, Ordering::AcqRel) {
        return;
    }
    c.removed_since_vacuum.store(0, Ordering::Relaxed);
    let (db, counters) = (db.clone(), counters.clone());
    tokio::spawn(async move {
        if let Ok(client) = db.client().await {
            let key = lock_key(&db);
            let locked = client
                .query_one("SELECT pg_try_advisory_lock(hashtext($1))", &[&key])
                .await
                .is_ok_and(|r| r.get::<_, bool>(0));
            if locked {
                if let Err(e) = upkeep(&db, &counters, &client).await {
                    db.failed("upkeep", e);
                }
                let _ = client
                    .execute("SELECT pg_advisory_unlock(hashtext($1))", &[&key])
                    .await;
            }
        }
        counters.vacuuming.store(false, Ordering::Release);
        // Rows removed meanwhile may make the next one due already.
        vacuum_if_due(&db, &counters);
    });
}

/// The advisory lock that lets one process of a schema at a time run the upkeep.
fn lock_key<T>(db: &Db<T>) -> String {
    format!("leaseq.vacuum.{}", db.options.schema)
}

/// The upkeep now, in this task: waits for another process's to end first.
pub(crate) async fn upkeep_now<T>(
    db: &Db<T>,
    counters: &Counters,
    client: &Client,
) -> Result<(), Error> {
    let key = lock_key(db);
    client
        .execute("SELECT pg_advisory_lock(hashtext($1))", &[&key])
        .await?;
    let r = upkeep(db, counters, client).await;
    let unlocked = client
        .execute("SELECT pg_advisory_unlock(hashtext($1))", &[&key])
        .await;
    r?;
    unlocked.map(drop)
}

/// The watermarks of writers gone for 30 days forgotten, `VACUUM` (with `ANALYZE` one time
/// in [`ANALYZE_EVERY`]), then the rebuild of bloated indexes (if the options allow it).
/// A role that may not maintain the table (a worker role: see the crate docs, "Least
/// privilege") forgets the watermarks only, and the store says so once (a warning and
/// [`PgStore::last_error`](crate::PgStore::last_error)); autovacuum keeps the table.
async fn upkeep<T>(db: &Db<T>, counters: &Counters, client: &Client) -> Result<(), Error> {
    client.execute(&db.sql.forget_marks, &[]).await?;
    // The keys held past their items whose window has ended (`settle_sql.rs`); a role
    // granted an older version's rights may not: they are then judged ended when read.
    match client.execute(&db.sql.op.prune_gone_keys, &[]).await {
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) => {}
        r => {
            r?;
        }
    }
    if !may_maintain(db, client).await? {
        if !counters.upkeep_refused.swap(true, Ordering::AcqRel) {
            db.said(format!(
                "upkeep: the role is not the owner of {}.items (nor has MAINTAIN): its \
                 VACUUM, ANALYZE and index rebuilds are skipped, left to autovacuum and the \
                 owner (said once)",
                db.options.schema
            ));
        }
        return Ok(());
    }
    let done = counters.vacuums.load(Ordering::Relaxed);
    let sql = if done % ANALYZE_EVERY == 0 {
        &db.sql.vacuum_analyze
    } else {
        &db.sql.vacuum
    };
    client.batch_execute(sql).await?;
    counters.vacuums.fetch_add(1, Ordering::Relaxed);
    if db.options.rebuild_bloated_indexes {
        rebuild_bloated(db, counters, client).await?;
    }
    Ok(())
}

/// Whether this session's role may `VACUUM`, `ANALYZE` and `REINDEX` the items table: its
/// owner (or a member of the owner's role, or a superuser), or, from PostgreSQL 17, a role
/// granted `MAINTAIN` on it.
async fn may_maintain<T>(db: &Db<T>, client: &Client) -> Result<bool, Error> {
    let row = client
        .query_one(
            "SELECT pg_has_role(c.relowner, 'USAGE')
                    OR CASE WHEN current_setting('server_version_num')::int >= 170000
                            THEN has_table_privilege(c.oid, 'MAINTAIN') ELSE false END
             FROM pg_class c WHERE c.oid = format('%I.items', $1::text)::regclass",
            &[&db.options.schema],
        )
        .await?;
    Ok(row.get(0))
}

/// Rebuilds each index of the items table that takes more than [`REBUILD_FACTOR`] times
/// what a fresh build would (its live entries as the `VACUUM` just before counted them,
/// their widths as the last `ANALYZE` did). An index left invalid by a rebuild that failed midway (the
/// server stopped, a lock timeout: the new one, `*_ccnew`, or the old one, `*_ccold`) is
/// dropped: it would otherwise be kept up to date by every write and used by no query.
async fn rebuild_bloated<T>(db: &Db<T>, counters: &Counters, client: &Client) -> Result<(), Error> {
    let schema = &db.options.schema;
    let rows = client
        .query(
            "SELECT c.relname::text, pg_relation_size(c.oid), c.reltuples::float8, i.indisvalid,
                    (SELECT sum(s.avg_width)::float8 FROM pg_attribute a
                     JOIN pg_stats s ON s.schemaname = $1 AND s.tablename = 'items'
                                    AND s.attname = a.attname
                     WHERE a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey))
             FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
             WHERE i.indrelid = format('%I.items', $1::text)::regclass",
            &[schema],
        )
        .await?;
    for row in rows {
        // An index dropped meanwhile (another queue's rebuild in this schema swapped it)
        // reads with no size: nothing to do with it. `try_get`: a row that does not decode
        // is skipped, never a panic in the upkeep task.
        let decoded = (|| -> Result<_, Error> {
            let size: Option<i64> = row.try_get(1)?;
            Ok((
                row.try_get::<_, String>(0)?,
                size,
                row.try_get::<_, Option<f64>>(2)?.unwrap_or(0.0),
                row.try_get::<_, bool>(3)?,
                row.try_get::<_, Option<f64>>(4)?,
            ))
        })();
        let Ok((name, Some(bytes), entries, valid, width)) = decoded else {
            continue;
        };
        let leftover = name.contains("_ccnew") || name.contains("_ccold");
        let statement = if !valid && leftover {
            format!("DROP INDEX CONCURRENTLY IF EXISTS \"{schema}\".\"{name}\"")
        } else if valid && bloated(bytes, entries, width) {
            format!("REINDEX INDEX CONCURRENTLY \"{schema}\".\"{name}\"")
        } else {
            continue;
        };
        client.batch_execute(&statement).await?;
        if valid {
            counters.reindexes.fetch_add(1, Ordering::Relaxed);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_is_rebuilt_past_twice_a_fresh_build() {
        // The primary key: one bigint, 27.3 bytes per entry fresh, rebuilt past 54.5.
        let fresh = fresh_bytes_per_entry(Some(8.0));
        assert!((fresh - 27.27).abs() < 0.01, "{fresh}");
        assert!(!bloated(REBUILD_FLOOR, -1.0, None), "small");
        assert!(!bloated(540_000, 10_000.0, Some(8.0)), "54 bytes per entry");
        assert!(bloated(550_000, 10_000.0, Some(8.0)), "55 bytes per entry");
        assert!(
            bloated(REBUILD_FLOOR + 1, 0.0, Some(8.0)),
            "empty, past the floor"
        );
        assert!(
            bloated(REBUILD_FLOOR + 1, -1.0, None),
            "never counted, past the floor"
        );
        // Unknown widths count as 48 bytes: 72.7 per entry fresh, rebuilt past 145.5.
        assert!(!bloated(1_450_000, 10_000.0, None), "145 bytes per entry");
        assert!(bloated(1_460_000, 10_000.0, None), "146 bytes per entry");
    }
}
