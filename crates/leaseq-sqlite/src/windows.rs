//! Unique keys' windows (`Push::key_window`) kept in the file (format 7): a live item's
//! window in its row (`window_kind`, `window_ns`: the period; `pushed_at`, wall-clock
//! nanoseconds), and the key of an item that left within its window in `gone_keys` until
//! the window ends, both given back to the core at open (`Queue::restore_key_window`,
//! `restore_gone_key`), so a throttle or a "live then a period" window holds across a
//! restart. The rules are the core's.
//!
//! Off the paths of queues that never used a window (`SqliteStore::windows`, set by the
//! first windowed push or a window found at open): then a keyed push and a finish journal
//! nothing more. With it: a keyed push also frees its key in the file (`Op::KeyTaken`: the
//! core let it go, so a holder whose window lapsed, still live, no longer holds it there,
//! and a gone key's entry goes); an item that leaves keeps its window's rest
//! (`Op::KeepWindow`, before its row is deleted, at the time it left). An entry found
//! ended at open is dropped.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use leaseq_async::{Codec, Push, Runtime};
use leaseq_core::{KeyWindow, MessageId, Queue, Timestamp, UniqueKey};
use rusqlite::{params, Connection, OptionalExtension};

use crate::op::{Op, RowWindow};
use crate::open_error::OpenError;
use crate::store::SqliteStore;

/// What a row keeps of `window` (none for `Live`), pushed at `pushed_at` on disk.
pub(crate) fn row_window(window: KeyWindow, pushed_at: i64) -> Option<RowWindow> {
    let ns = |d: Duration| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
    let (kind, ns) = match window {
        KeyWindow::Queued => (1, 0),
        KeyWindow::Period(d) => (2, ns(d)),
        KeyWindow::LiveThen(d) => (3, ns(d)),
        _ => return None,
    };
    Some(RowWindow {
        kind,
        ns,
        pushed_at,
    })
}

/// The window a row keeps.
fn window_of(kind: u8, ns: i64) -> KeyWindow {
    let d = Duration::from_nanos(u64::try_from(ns).unwrap_or(0));
    match kind {
        1 => KeyWindow::Queued,
        2 => KeyWindow::Period(d),
        3 => KeyWindow::LiveThen(d),
        _ => KeyWindow::Live,
    }
}

/// Gives a restored live item's window back to `core` (`pushed_at` on the runtime's clock).
pub(crate) fn restore_window<T>(
    core: &mut Queue<T>,
    id: MessageId,
    key: &UniqueKey,
    (kind, ns): (u8, i64),
    pushed_at: Timestamp,
) {
    core.restore_key_window(id, key, window_of(kind, ns), pushed_at);
}

/// Reads `gone_keys` into `core` (a file before format 7 has none); whether it held any.
pub(crate) fn restore_gone<T>(
    path: &Path,
    conn: &Connection,
    core: &mut Queue<T>,
    version: i32,
    from_disk: impl Fn(i64) -> Timestamp,
) -> Result<bool, OpenError> {
    if version < crate::flow::FLOW_VERSION {
        return Ok(false);
    }
    let sql = |e| OpenError::from_sqlite(path, e);
    let mut st = conn
        .prepare("SELECT key, id, until FROM gone_keys")
        .map_err(sql)?;
    let rows = st
        .query_map([], |r| {
            Ok((
                r.get::<_, Vec<u8>>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })
        .map_err(sql)?;
    let mut any = false;
    for row in rows {
        let (key, id, until) = row.map_err(sql)?;
        if let Some(key) = UniqueKey::new(key) {
            any = true;
            let id = MessageId::new(u64::try_from(id).unwrap_or(0));
            core.restore_gone_key(key, from_disk(until), id);
        }
    }
    Ok(any)
}

/// `Op::KeyTaken`: `key` is `id`'s now; a lapsed live holder no longer holds it, a gone
/// key's entry goes.
pub(crate) fn write_key_taken(
    tx: &rusqlite::Transaction<'_>,
    id: u64,
    key: &[u8],
) -> rusqlite::Result<()> {
    tx.prepare_cached("DELETE FROM gone_keys WHERE key = ?1")?
        .execute(params![key])?;
    tx.prepare_cached("UPDATE items SET key = NULL WHERE key = ?1 AND id != ?2 AND dead = 0")?
        .execute(params![key, id as i64])?;
    Ok(())
}

/// A row's key, window kind, period and push time.
type WindowRow = (Option<Vec<u8>>, Option<i64>, Option<i64>, Option<i64>);

/// `Op::KeepWindow`: the item `id` leaves at `at`; its key is kept for its window's rest
/// (a period after the push, or a period from now). Whether its row was there (`false`:
/// the op waits for the insert).
pub(crate) fn write_keep_window(
    tx: &rusqlite::Transaction<'_>,
    id: u64,
    at: i64,
) -> rusqlite::Result<bool> {
    let row: Option<WindowRow> = tx
        .prepare_cached("SELECT key, window_kind, window_ns, pushed_at FROM items WHERE id = ?1")?
        .query_row(params![id as i64], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()?;
    let Some((key, kind, ns, pushed_at)) = row else {
        return Ok(false);
    };
    let until = match (kind, ns) {
        (Some(2), Some(ns)) => pushed_at.unwrap_or(at).saturating_add(ns),
        (Some(3), Some(ns)) => at.saturating_add(ns),
        _ => return Ok(true),
    };
    if let (Some(key), true) = (key, until > at) {
        tx.prepare_cached("INSERT OR REPLACE INTO gone_keys (key, id, until) VALUES (?1, ?2, ?3)")?
            .execute(params![key, id as i64, until])?;
    }
    Ok(true)
}

impl<T: Clone + Send + 'static, R: Runtime, C: Codec<T>> SqliteStore<T, R, C> {
    /// Whether windows are in use; marks them so for a windowed push.
    pub(crate) fn windows_for(&self, push: &Push) -> bool {
        if push.has_key_window() {
            self.windows.store(true, Ordering::Relaxed);
            return true;
        }
        self.windows.load(Ordering::Relaxed)
    }

    /// The op that keeps the window of `id`, leaving now, when windows are in use.
    pub(crate) fn keep_window_op(&self, id: MessageId) -> Option<Op> {
        if !self.windows.load(Ordering::Relaxed) {
            return None;
        }
        let at = self.to_disk(leaseq_async::Store::runtime(&*self.inner).now());
        Some(Op::KeepWindow { id: id.get(), at })
    }
}
