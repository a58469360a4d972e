//! The record of finished jobs in the queue file (format 6, [`Options::retention`](crate::Options::retention)):
//! the `history` table, the entry each finish writes in the same group commit as its
//! change (an [`Op::Finished`](crate::op::Op) beside the ack's or cancel's delete, after the
//! dead letter's update, read from the item's row as it stands), the store's upkeep removing
//! entries by age, and the page read by `Store::history` and `FileView::history`.

use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use leaseq_async::{FinishOutcome, Finished, HistoryQuery};
use leaseq_core::{MessageId, Reason};
use rusqlite::{params, Connection};

use crate::open_error::OpenError;

/// The first format with the `history` table.
pub(crate) const HISTORY_VERSION: i32 = 6;

/// The table: entries numbered by `seq` (SQLite's rowid, rising) in the order they were
/// committed; the kind bytes of a router envelope read from the payload (byte 0 its length
/// `L`, bytes `1..=L` the kind), as Postgres reads them.
pub(crate) const HISTORY_TABLE: &str = "CREATE TABLE IF NOT EXISTS history (
             seq INTEGER PRIMARY KEY AUTOINCREMENT,
             id INTEGER NOT NULL,
             kind BLOB,
             outcome INTEGER NOT NULL,
             reason INTEGER,
             attempts INTEGER NOT NULL,
             finished_at INTEGER NOT NULL,
             last_error TEXT
         );";

/// Format 5 to 6: the table, in one transaction with the version change.
pub(crate) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&format!(
        "BEGIN;
         {HISTORY_TABLE}
         PRAGMA user_version = {HISTORY_VERSION};
         COMMIT;"
    ))
}

/// The first byte of `payload` as an integer (SQLite has no byte function: through `hex`).
const LEN: &str = "((instr('0123456789ABCDEF', substr(hex(payload), 1, 1)) - 1) * 16 \
                   + instr('0123456789ABCDEF', substr(hex(payload), 2, 1)) - 1)";

/// Writes the entry of item `id` finished with `outcome` at `at` (wall-clock ns), from its
/// row as it stands; how many rows (0: the row is not there yet, see `commit.rs`'s early
/// ops).
pub(crate) fn write(
    tx: &rusqlite::Transaction<'_>,
    id: u64,
    outcome: u8,
    at: i64,
) -> rusqlite::Result<usize> {
    let sql = format!(
        "INSERT INTO history (id, kind, outcome, reason, attempts, finished_at, last_error)
         SELECT id, CASE WHEN length(payload) > 0 AND {LEN} > 0 AND length(payload) > {LEN}
                         THEN substr(payload, 2, {LEN}) END,
                ?2, CASE WHEN ?2 = 0 OR ?2 = 2 THEN NULL ELSE reason END, attempts, ?3, last_error
         FROM items WHERE id = ?1"
    );
    tx.prepare_cached(&sql)?
        .execute(params![id as i64, outcome, at])
}

/// Removes the entries that finished before `before` (wall-clock ns).
pub(crate) fn prune(tx: &rusqlite::Transaction<'_>, before: i64) -> rusqlite::Result<usize> {
    tx.prepare_cached("DELETE FROM history WHERE finished_at < ?1")?
        .execute(params![before])
}

/// The entries `query` asks for, oldest first (none in a file of a format before 6).
pub(crate) fn read(
    path: &Path,
    conn: &Connection,
    version: i32,
    query: &HistoryQuery,
) -> Result<Vec<Finished>, OpenError> {
    if version < HISTORY_VERSION || query.limit == 0 {
        return Ok(Vec::new());
    }
    let sql = |e| OpenError::from_sqlite(path, e);
    let mut st = conn
        .prepare_cached(
            "SELECT seq, id, kind, outcome, reason, attempts, finished_at, last_error
             FROM history WHERE seq > ?1 AND (?2 IS NULL OR kind = ?2)
               AND (?3 IS NULL OR outcome = ?3)
             ORDER BY seq LIMIT ?4",
        )
        .map_err(sql)?;
    let after = i64::try_from(query.after.unwrap_or(0)).unwrap_or(i64::MAX);
    let kind = query.kind.as_ref().map(|k| k.as_bytes().to_vec());
    let outcome = query.outcome.map(FinishOutcome::code);
    let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
    let mut rows = st
        .query(params![after, kind, outcome, limit])
        .map_err(sql)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(sql)? {
        let bad = |why: String| OpenError::BadRow {
            path: path.to_path_buf(),
            row: "history".into(),
            why,
        };
        let get = |e: rusqlite::Error| bad(e.to_string());
        let seq: i64 = row.get(0).map_err(get)?;
        let id: i64 = row.get(1).map_err(get)?;
        let kind: Option<Vec<u8>> = row.get(2).map_err(get)?;
        let code: i64 = row.get(3).map_err(get)?;
        let reason: Option<i64> = row.get(4).map_err(get)?;
        let attempts: i64 = row.get(5).map_err(get)?;
        let at: i64 = row.get(6).map_err(get)?;
        let outcome = u8::try_from(code)
            .ok()
            .and_then(FinishOutcome::from_code)
            .ok_or_else(|| {
                bad(format!(
                    "entry {seq}: outcome {code} is none this version knows"
                ))
            })?;
        let mut f = Finished::new(
            seq as u64,
            MessageId::new(id as u64),
            outcome,
            u32::try_from(attempts).unwrap_or(u32::MAX),
            UNIX_EPOCH + Duration::from_nanos(at.max(0) as u64),
        );
        f.kind = kind.and_then(|k| String::from_utf8(k).ok());
        f.reason = reason
            .and_then(|c| u8::try_from(c).ok())
            .and_then(Reason::from_code);
        f.last_error = row.get(7).map_err(get)?;
        out.push(f);
    }
    Ok(out)
}
