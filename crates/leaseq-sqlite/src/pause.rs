//! The pause flag kept in the queue file: the `meta` row `paused` (1 while paused; absent or
//! 0 while running), from format 5 on. Pausing changes the memory store at once (its core
//! then leases nothing, so every handle of this process sees it within one receive) and
//! journals the row; the call answers once the row is committed. At open the row is read
//! back, so a queue paused by one process stays paused for the next owner.
//!
//! The file has one owner at a time: another process pauses a queue by opening its file as
//! its owner (the CLI's `leaseq sqlite FILE pause`), refused while a process holds it.

use std::path::Path;

use leaseq_async::{Codec, Runtime, StoreError};
use rusqlite::{params, Connection, OptionalExtension};

use crate::op::Op;
use crate::open_error::OpenError;
use crate::store::SqliteStore;

/// The first format with the pause flag. (Format 4 was reserved and never written; a file
/// of format 3 or 4 is migrated to this one at open, then to 6, the history table's.)
pub(crate) const PAUSE_VERSION: i32 = 5;

/// Whether the file says the queue is paused (a file without the row: running).
pub(crate) fn read(path: &Path, conn: &Connection) -> Result<bool, OpenError> {
    let value: Option<i64> = conn
        .query_row("SELECT value FROM meta WHERE key = 'paused'", [], |r| {
            r.get(0)
        })
        .optional()
        .map_err(|e| OpenError::BadRow {
            path: path.to_path_buf(),
            row: "meta paused".into(),
            why: e.to_string(),
        })?;
    Ok(value.is_some_and(|v| v != 0))
}

/// Writes the flag's row (the op of a pause or resume).
pub(crate) fn write(tx: &rusqlite::Transaction<'_>, paused: bool) -> rusqlite::Result<()> {
    tx.prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES ('paused', ?1)")?
        .execute(params![i64::from(paused)])?;
    Ok(())
}

/// Format 3 or 4 to 5: the flag needs no new table (a file without the row is running),
/// but a file that may hold it is one an older version must refuse rather than run a
/// paused queue; in one transaction with the version change.
pub(crate) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&format!(
        "BEGIN;
         PRAGMA user_version = {PAUSE_VERSION};
         COMMIT;"
    ))
}

impl<T: Clone + Send + 'static, R: Runtime, C: Codec<T>> SqliteStore<T, R, C> {
    /// Pauses (`true`) or resumes the queue: at once on the memory store, answered once the
    /// flag is committed to the file; whether it changed.
    pub(crate) async fn set_paused_durably(&self, paused: bool) -> Result<bool, StoreError> {
        let (changed, seq) = {
            // Flags journaled in the order they were set on the memory store.
            let _order = self.schedule_lock.lock();
            let changed = self.inner.set_paused(paused);
            (changed, self.journal.submit([Op::Paused(paused)]))
        };
        self.journal.committed(seq).await?;
        Ok(changed)
    }
}
