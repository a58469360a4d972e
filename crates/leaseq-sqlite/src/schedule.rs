//! Schedules kept in the queue file: the `schedules` table (format 3 on; a format-2 file is
//! migrated at open), read back into the memory store at open and by the inspector, and a
//! scheduler step committed through the journal: its ticks' inserts, the stale ticks taken
//! back (dead letters, reason `Expired`) and the schedule's new row are queued as one batch
//! of ops, so the writer commits them in one transaction; the step answers once it is
//! committed.
//!
//! The compare-and-set is the memory store's (under its lock): the file has one owner at a
//! time, so every scheduler of this file's queue runs in this process, and the memory
//! store's state is the file's. Two steps of this process are journaled in the order they
//! were made (`SqliteStore::schedule_lock`), so the file's row is the last step's.

use std::path::Path;

use leaseq_async::{
    Codec, PushError, Runtime, ScheduleCommit, ScheduleCommitError, ScheduleCommitted,
    ScheduleState, Store,
};
use leaseq_core::{Reason, Timestamp};
use rusqlite::{params, Connection};

use crate::op::Op;

/// What a schedule's tick with a key window (`Push::key_window`) is refused as: a step's
/// batch journals its ticks' inserts without the window's rows (`windows.rs` keeps the
/// windows of the plain pushes).
pub(crate) const KEY_WINDOWS: &str =
    "unique key windows (Push::key_window) on a schedule's tick on the SQLite store";
use crate::open_error::OpenError;
use crate::store::SqliteStore;

/// The first format with the `schedules` table.
pub(crate) const SCHEDULES_VERSION: i32 = 3;

/// The table: one row per schedule, times as wall-clock nanoseconds (as every time of the
/// file).
pub(crate) const SCHEDULES_TABLE: &str = "CREATE TABLE IF NOT EXISTS schedules (
     name TEXT PRIMARY KEY,
     cursor INTEGER NOT NULL,
     last_tick INTEGER,
     next_tick INTEGER,
     moved_at INTEGER NOT NULL,
     calendar TEXT
 ) WITHOUT ROWID;";

/// Format 2 to 3: the `schedules` table, in one transaction with the version change.
pub(crate) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&format!(
        "BEGIN;
         {SCHEDULES_TABLE}
         PRAGMA user_version = {SCHEDULES_VERSION};
         COMMIT;"
    ))
}

fn to_disk(t: Timestamp) -> i64 {
    i64::try_from(t.as_nanos()).unwrap_or(i64::MAX)
}

fn from_disk(ns: i64) -> Timestamp {
    Timestamp::from_nanos(ns.max(0) as u64)
}

/// Every schedule of the file at `path`, of format `version` (none before format 3), by
/// name.
pub(crate) fn read_all(
    path: &Path,
    conn: &Connection,
    version: i32,
) -> Result<Vec<ScheduleState>, OpenError> {
    if version < SCHEDULES_VERSION {
        return Ok(Vec::new());
    }
    let sql = |e| OpenError::from_sqlite(path, e);
    let mut st = conn
        .prepare(
            "SELECT name, cursor, last_tick, next_tick, moved_at, calendar FROM schedules \
             ORDER BY name",
        )
        .map_err(sql)?;
    let mut rows = st.query([]).map_err(sql)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(sql)? {
        let name: String = row.get(0).map_err(sql)?;
        let bad = |e: rusqlite::Error| OpenError::BadRow {
            path: path.to_path_buf(),
            row: format!("schedule {name:?}"),
            why: e.to_string(),
        };
        let mut state = ScheduleState::new(
            name.clone(),
            from_disk(row.get(1).map_err(bad)?),
            from_disk(row.get(4).map_err(bad)?),
        );
        state.last_tick = row.get::<_, Option<i64>>(2).map_err(bad)?.map(from_disk);
        state.next_tick = row.get::<_, Option<i64>>(3).map_err(bad)?.map(from_disk);
        state.calendar = row.get(5).map_err(bad)?;
        out.push(state);
    }
    Ok(out)
}

/// Writes a schedule's row (the op of a committed step).
pub(crate) fn write(tx: &rusqlite::Transaction<'_>, state: &ScheduleState) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT OR REPLACE INTO schedules (name, cursor, last_tick, next_tick, moved_at, calendar) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        state.name,
        to_disk(state.cursor),
        state.last_tick.map(to_disk),
        state.next_tick.map(to_disk),
        to_disk(state.moved_at),
        state.calendar
    ])?;
    Ok(())
}

/// A tick's row, but for its id: payload, visibility, expiry, level, key, flow keys.
struct TickRow {
    payload: Vec<u8>,
    visible_at: i64,
    expires_at: Option<i64>,
    priority: u8,
    key: Option<Vec<u8>>,
    flow: Option<leaseq_core::FlowKeys>,
}

impl<T: Clone + Send + 'static, R: Runtime, C: Codec<T>> SqliteStore<T, R, C> {
    /// `Store::commit_schedule`: the step made on the memory store (the compare-and-set),
    /// its ops journaled as one batch, answered once committed.
    pub(crate) async fn commit_schedule_step(
        &self,
        mut step: ScheduleCommit<T>,
    ) -> Result<ScheduleCommitted, ScheduleCommitError<T>> {
        // Nothing is accepted while commits fail: it could not be made durable.
        if self.journal.failing() {
            return Err(ScheduleCommitError::Store(self.journal.refusal()));
        }
        let now = self.inner.runtime().now();
        // Encoded before any lock is taken.
        let mut rows = Vec::with_capacity(step.ticks.len());
        for i in 0..step.ticks.len() {
            let (job, push) = &step.ticks[i];
            let windowed = push.has_key_window().then_some(KEY_WINDOWS);
            if let Some(what) = push.flow_conflict().or(windowed) {
                let (item, _) = step.ticks.swap_remove(i);
                return Err(ScheduleCommitError::Push(PushError::Unsupported {
                    item,
                    what,
                }));
            }
            let payload = match self.codec.encode(job) {
                Ok(p) => p,
                Err(e) => {
                    let (item, _) = step.ticks.swap_remove(i);
                    let error = e.to_string();
                    return Err(ScheduleCommitError::Push(PushError::Encode { item, error }));
                }
            };
            if payload.len() > self.max_item_size {
                let (size, max) = (payload.len(), self.max_item_size);
                let (item, _) = step.ticks.swap_remove(i);
                return Err(ScheduleCommitError::Push(PushError::TooLarge {
                    item,
                    size,
                    max,
                }));
            }
            let (delay, ttl, options) = push.parts();
            rows.push(TickRow {
                payload,
                visible_at: if delay.is_zero() {
                    0
                } else {
                    self.to_disk(now.saturating_add(delay))
                },
                expires_at: ttl.map(|ttl| self.to_disk(now.saturating_add(ttl))),
                priority: options.priority,
                key: options.key_bytes().map(<[u8]>::to_vec),
                flow: push.flow(),
            });
        }
        let state = step.state.clone();
        let (committed, seq) = {
            // Steps journaled in the order they were made on the memory store.
            let _order = self.schedule_lock.lock();
            let (committed, withdrawn) = self.inner.commit_schedule_now(step)?;
            let mut ops: Vec<Op> = committed
                .ids
                .iter()
                .zip(rows)
                .filter_map(|(id, row)| {
                    id.map(|id| Op::Insert {
                        id: id.get(),
                        payload: row.payload,
                        visible_at: row.visible_at,
                        expires_at: row.expires_at,
                        priority: row.priority,
                        key: row.key,
                        flow: row.flow,
                        window: None,
                    })
                })
                .collect();
            ops.extend(withdrawn.into_iter().map(|(id, attempts, at)| Op::Dead {
                id: id.get(),
                attempts,
                reason: Reason::Expired.code(),
                error: None,
                at: self.to_disk(at),
            }));
            ops.push(Op::Schedule(state));
            (committed, self.journal.submit(ops))
        };
        self.journal
            .committed(seq)
            .await
            .map_err(ScheduleCommitError::Store)?;
        Ok(committed)
    }
}
