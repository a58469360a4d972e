//! Reading a queue file's rows back into a fresh core at open: live items and dead letters,
//! the leases the previous process held (back at once, their attempt counted), and the ids'
//! high-water mark. Nothing is written here: the fixes for the leases cut by the previous
//! process are returned as ops, committed by `open` once every row was read.

use std::path::Path;

use leaseq_async::{Codec, Progress};
use leaseq_core::{
    FlowKeys, MessageId, Queue, Reason, Restored, RestoredDeadLetter, Timestamp, UniqueKey,
};
use rusqlite::types::Value;
use rusqlite::Connection;

use crate::op::Op;
use crate::open_error::OpenError;

/// One row of `items`, as stored.
pub(crate) struct Row {
    pub(crate) id: u64,
    pub(crate) payload: Vec<u8>,
    pub(crate) attempts: u32,
    pub(crate) visible_at: i64,
    pub(crate) expires_at: Option<i64>,
    pub(crate) priority: u8,
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) leased: bool,
    pub(crate) last_error: Option<String>,
    pub(crate) dead: bool,
    pub(crate) reason: Option<i64>,
    pub(crate) dead_at: Option<i64>,
    pub(crate) progress: Option<Vec<u8>>,
}

/// The columns [`read_row`] reads, in its order, from `items` (`?1`: the largest payload
/// loaded; a larger one is refused unread). `with_progress`: the file has the `progress`
/// column (format 2 on); without it, every row reads as having no checkpoint.
pub(crate) fn row_columns(with_progress: bool) -> String {
    let progress = if with_progress { "progress" } else { "NULL" };
    format!(
        "id, CASE WHEN length(payload) <= ?1 THEN payload END, attempts, visible_at, \
         expires_at, priority, key, leased, last_error, dead, reason, dead_at, \
         length(payload), {progress}"
    )
}

/// A row of a query selecting [`row_columns`], checked.
/// (`path`: the file, for errors.)
pub(crate) fn read_row(path: &Path, row: &rusqlite::Row<'_>) -> Result<Row, OpenError> {
    let id: i64 = row.get(0).map_err(|e| OpenError::from_sqlite(path, e))?;
    let bad_row = |why: String| OpenError::BadRow {
        path: path.to_path_buf(),
        row: format!("item {id}"),
        why,
    };
    let bad = |e: rusqlite::Error| bad_row(e.to_string());
    if id < 0 {
        return Err(bad_row("a negative id".into()));
    }
    let size: i64 = row.get(12).map_err(bad)?;
    let Some(payload) = row.get::<_, Option<Vec<u8>>>(1).map_err(bad)? else {
        return Err(bad_row(format!(
            "its item is {size} bytes, over Options::max_item_size: raise it to open this \
             file"
        )));
    };
    Ok(Row {
        id: id as u64,
        payload,
        attempts: row.get(2).map_err(bad)?,
        visible_at: row.get(3).map_err(bad)?,
        expires_at: row.get(4).map_err(bad)?,
        priority: row.get(5).map_err(bad)?,
        key: row.get(6).map_err(bad)?,
        leased: row.get(7).map_err(bad)?,
        last_error: row.get(8).map_err(bad)?,
        dead: row.get(9).map_err(bad)?,
        reason: row.get(10).map_err(bad)?,
        dead_at: row.get(11).map_err(bad)?,
        progress: row.get(13).map_err(bad)?,
    })
}

/// The ids' high-water mark in `meta`: a non-negative integer, or the file is refused.
pub(crate) fn next_id(path: &Path, conn: &Connection) -> Result<u64, OpenError> {
    let bad = |why: String| OpenError::BadRow {
        path: path.to_path_buf(),
        row: "meta next_id".into(),
        why,
    };
    let value: Value = conn
        .query_row("SELECT value FROM meta WHERE key = 'next_id'", [], |r| {
            r.get(0)
        })
        .map_err(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => bad("missing".into()),
            e => OpenError::from_sqlite(path, e),
        })?;
    match value {
        Value::Integer(n) if n >= 0 => Ok(n as u64),
        other => Err(bad(format!("{other:?} is not a non-negative integer"))),
    }
}

/// What the rows gave besides the core's items: the ops that record, for leases the
/// previous process held, that they came back (or became dead letters); the checkpoints.
/// And whether a row kept a key's window.
pub(crate) type RestoredRows = (Vec<Op>, Vec<(MessageId, Progress)>, bool);

/// Restores every row of `items` into `core` (`version`: the file's format, which says
/// which columns it has: `progress` from 2, flow control's from 7) of the file at `path`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn restore_rows<T, C: Codec<T>>(
    path: &Path,
    conn: &Connection,
    core: &mut Queue<T>,
    codec: &C,
    now: Timestamp,
    offset: i128,
    max_item: usize,
    version: i32,
) -> Result<RestoredRows, OpenError> {
    let with_progress = version >= crate::check::PROGRESS_VERSION;
    let max_attempts = core.config().max_attempts();
    let from_disk = |t: i64| -> Timestamp {
        let ns = (t as i128 - offset).clamp(0, u64::MAX as i128 - 1) as u64;
        Timestamp::from_nanos(ns)
    };
    let (mut fixes, mut checkpoints, mut windows) = (Vec::new(), Vec::new(), false);
    let columns = row_columns(with_progress);
    let sql = |e| OpenError::from_sqlite(path, e);
    let mut st = conn
        .prepare(&format!(
            "SELECT {columns}, {} FROM items ORDER BY id",
            crate::flow::row_columns(version)
        ))
        .map_err(sql)?;
    // An item over the limit is never read (see `Options::max_item_size`).
    let mut rows = st
        .query([i64::try_from(max_item).unwrap_or(i64::MAX)])
        .map_err(sql)?;
    while let Some(row) = rows.next().map_err(sql)? {
        let r = read_row(path, row)?;
        let id = r.id;
        let (keys, snoozes, window) = flow_of(path, id, row)?;
        windows |= window.is_some();
        let item = codec
            .decode(&r.payload)
            .map_err(|error| OpenError::Decode {
                path: path.to_path_buf(),
                id,
                error,
            })?;
        let key = r.key.and_then(UniqueKey::new);
        let expires_at = r.expires_at.map(from_disk);
        let restart = r.leased && !r.dead;
        if let Some(p) = &r.progress {
            checkpoints.push((MessageId::new(id), Progress::from_stored(p)));
        }
        if r.dead || (restart && r.attempts >= max_attempts) {
            let (reason, last_error, at) = if r.dead {
                (
                    // An unknown code (a newer version's reason) reads as "dropped".
                    r.reason
                        .and_then(|c| u8::try_from(c).ok())
                        .and_then(Reason::from_code)
                        .unwrap_or(Reason::Dropped),
                    r.last_error,
                    r.dead_at.map_or(now, from_disk),
                )
            } else {
                // Its last lease was cut by the process dying.
                let reason = Reason::Dropped;
                let error = Some("process restart".to_string());
                fixes.push(Op::Dead {
                    id,
                    attempts: r.attempts,
                    reason: reason.code(),
                    error: error.clone(),
                    at: (now.as_nanos() as i128 + offset) as i64,
                });
                (reason, error, now)
            };
            core.restore_dead_letter_flow(
                RestoredDeadLetter {
                    id: MessageId::new(id),
                    item,
                    attempts: r.attempts,
                    reason,
                    last_error,
                    at,
                    expires_at,
                    priority: r.priority,
                    key,
                },
                keys,
            )
            .map_err(|error| OpenError::Restore {
                path: path.to_path_buf(),
                error,
            })?;
        } else {
            let (visible_at, last_error) = if restart {
                // The lease the dead process held comes back at once, its attempt counted
                // (it was recorded before the delivery was handed out).
                fixes.push(Op::Retry {
                    id,
                    attempts: r.attempts,
                    visible_at: 0,
                    error: Some("process restart".into()),
                });
                (now, Some("process restart".to_string()))
            } else {
                (from_disk(r.visible_at), r.last_error)
            };
            core.restore_flow(
                Restored {
                    id: MessageId::new(id),
                    item,
                    attempts: r.attempts,
                    visible_at,
                    expires_at,
                    priority: r.priority,
                    key,
                    last_error,
                },
                now,
                keys,
                snoozes,
            )
            .map_err(|error| OpenError::Restore {
                path: path.to_path_buf(),
                error,
            })?;
            if let (Some(key), Some((kind, ns, pushed_at))) = (&key, window) {
                let at = from_disk(pushed_at);
                crate::windows::restore_window(core, MessageId::new(id), key, (kind, ns), at);
            }
        }
    }
    Ok((fixes, checkpoints, windows))
}

/// A row's key window: kind, period, push time.
type Window = Option<(u8, i64, i64)>;

/// A row's flow keys, uncounted snoozes and key window (the columns after `row_columns`').
fn flow_of(
    path: &Path,
    id: u64,
    row: &rusqlite::Row<'_>,
) -> Result<(FlowKeys, u32, Window), OpenError> {
    let bad = |e: rusqlite::Error| OpenError::BadRow {
        path: path.to_path_buf(),
        row: format!("item {id}"),
        why: e.to_string(),
    };
    let keys = crate::flow::keys_of([
        row.get(14).map_err(bad)?,
        row.get(15).map_err(bad)?,
        row.get(16).map_err(bad)?,
    ]);
    let kind: Option<u8> = row.get(18).map_err(bad)?;
    let ns: Option<i64> = row.get(19).map_err(bad)?;
    let at: Option<i64> = row.get(20).map_err(bad)?;
    let window = kind.map(|k| (k, ns.unwrap_or(0), at.unwrap_or(0)));
    Ok((keys, row.get(17).map_err(bad)?, window))
}
