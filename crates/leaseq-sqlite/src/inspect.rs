//! A queue file read without opening the queue ([`FileView`]): the same format check as an
//! open, then a `query_only` connection and the rows decoded as an open decodes them.
//! Nothing is written: no owner lock taken, no lease of a dead process brought back, no
//! commit.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leaseq_async::{
    DeadFilter, Finished, HistoryQuery, Page, ScheduleState, StoredCounts, StoredItem, StoredState,
};
use leaseq_core::{MessageId, Reason};
use rusqlite::{Connection, OpenFlags};

use crate::check::MadeShm;
use crate::open_error::{FileError, OpenError};
use crate::restore::{read_row, row_columns, Row};

/// A queue file, read-only: its counts, live items and dead letters as stored, for operator
/// tools (the `leaseq` command line reads files through it).
///
/// A file holds one queue (its name the one its last open recorded, see
/// [`queue_name`](Self::queue_name)). Reading works while the
/// queue is open in another process (SQLite's WAL lets readers in); what the file shows is
/// its last commit. A lease there (`in flight`) is the owner's, or, if no process owns the
/// file, one cut by a process that died: it comes back at the next open.
#[derive(Debug)]
pub struct FileView {
    conn: Connection,
    /// Dropped after `conn`: the `-shm` it made beside a `-wal` found without one.
    _made_shm: MadeShm,
    path: PathBuf,
    /// The file has the `progress` column (format 2 on; an older file is read as it is).
    with_progress: bool,
    /// The file's format version.
    version: i32,
}

impl FileView {
    /// Checks `path` as an open does (a missing, foreign, corrupt or newer file refused
    /// with its [`OpenError`]) and opens it read-only.
    ///
    /// An owner closing the file meanwhile removes its `-wal` and `-shm` under SQLite's
    /// locks; an open that meets that moment fails with `SQLITE_CANTOPEN`, and is tried
    /// again for up to 5 s (as a busy file is waited for).
    pub fn open(path: impl AsRef<Path>) -> Result<FileView, OpenError> {
        crate::view_retry::retrying(path.as_ref(), Self::open_once)
    }

    /// Fault injection: the next `n` tries of [`open`](Self::open) on this thread fail
    /// with `SQLITE_CANTOPEN` before they touch the file (replacing any left); returns how
    /// many were left. `n` = 0 clears them.
    #[cfg(feature = "fault-injection")]
    pub fn fail_opens(n: u32) -> u32 {
        let left = crate::view_retry::injected::left();
        crate::view_retry::injected::set(n);
        left
    }

    fn open_once(path: &Path) -> Result<FileView, OpenError> {
        // Before the check, whose read-only connection makes a missing WAL.
        let had_wal = Path::new(&format!("{}-wal", path.display())).exists();
        let Some((version, checked)) = crate::check::check(path, Duration::from_secs(5))? else {
            return Err(not_found(path));
        };
        // The view reads on a connection of its own (below), kept as long as the view.
        drop(checked);
        let made_shm = MadeShm::before_open(path);
        let sql = |e| OpenError::from_sqlite(path, e);
        // A connection on a WAL file makes its `-wal` and `-shm` if they are missing, and a
        // read-only one leaves them behind. A writable one with `query_only` set writes no
        // row either, and when it is the file's last connection SQLite removes them at
        // close, under its own locks (as it does for the queue's owner), after a checkpoint
        // of their nothing: the directory is left as it was. A WAL there before (a running
        // owner's, or one a crash left with commits in it) is neither checkpointed nor
        // removed at close: the file and its WAL stay byte for byte (a `-shm` SQLite made
        // beside a WAL found without one is removed when the view is dropped: `MadeShm`).
        // Read-only when the file may not be written.
        let conn = match Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        ) {
            Ok(conn) => {
                conn.pragma_update(None, "query_only", true).map_err(sql)?;
                if had_wal {
                    conn.set_db_config(
                        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                        true,
                    )
                    .map_err(sql)?;
                }
                conn
            }
            Err(_) => Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(sql)?,
        };
        conn.busy_timeout(Duration::from_secs(5)).map_err(sql)?;
        Ok(FileView {
            conn,
            _made_shm: made_shm,
            path: path.to_path_buf(),
            with_progress: version >= crate::check::PROGRESS_VERSION,
            version,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The name of the queue in the file: the builder's name at its last open (`None` for
    /// a file no open of this version has recorded a name in yet).
    pub fn queue_name(&self) -> Result<Option<String>, OpenError> {
        use rusqlite::OptionalExtension;
        let name: Option<rusqlite::types::Value> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'queue_name'", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.sql(e))?;
        Ok(match name {
            Some(rusqlite::types::Value::Text(name)) => Some(name),
            _ => None,
        })
    }

    /// The items counted by state, as of now on the wall clock, under the queue's name
    /// ([`queue_name`](Self::queue_name); empty when none is recorded), and whether the queue
    /// is paused.
    pub fn counts(&self) -> Result<StoredCounts, OpenError> {
        let now = wall_nanos(SystemTime::now());
        let (ready, delayed, in_flight, dead) = self
            .conn
            .query_row(
                "SELECT
                 count(*) FILTER (WHERE dead = 0 AND leased = 0 AND visible_at <= ?1),
                 count(*) FILTER (WHERE dead = 0 AND leased = 0 AND visible_at > ?1),
                 count(*) FILTER (WHERE dead = 0 AND leased = 1),
                 count(*) FILTER (WHERE dead = 1)
             FROM items",
                [now],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .map_err(|e| self.sql(e))?;
        let n = |x: i64| x.max(0) as u64;
        let paused = crate::pause::read(&self.path, &self.conn)?;
        Ok(StoredCounts::new(
            self.queue_name()?.unwrap_or_default(),
            n(ready),
            n(delayed),
            n(in_flight),
            n(dead),
        )
        .with_paused(paused))
    }

    /// The schedules kept in the file (each one's cursor, last and next tick, when the
    /// cursor last moved, its calendar in words), by name; none in a file of a format
    /// before schedules were kept.
    pub fn schedules(&self) -> Result<Vec<ScheduleState>, OpenError> {
        crate::schedule::read_all(&self.path, &self.conn, self.version)
    }

    /// The live items (ready, delayed, in flight) of `page`, in id order.
    pub fn items(&self, page: Page) -> Result<Vec<StoredItem>, OpenError> {
        self.rows(false, page, &DeadFilter::<()>::all())
    }

    /// The dead letters of `page`, in id order.
    pub fn dead_letters(&self, page: Page) -> Result<Vec<StoredItem>, OpenError> {
        self.rows(true, page, &DeadFilter::<()>::all())
    }

    /// The dead letters `filter` takes (its reason, and its job kind read from the stored
    /// bytes, in SQL), of `page`, in id order: what a bulk call with it would take.
    pub fn dead_letters_matching<T>(
        &self,
        page: Page,
        filter: &DeadFilter<T>,
    ) -> Result<Vec<StoredItem>, OpenError> {
        if filter.matches_none() {
            return Ok(Vec::new());
        }
        self.rows(true, page, filter)
    }

    fn rows<T>(
        &self,
        dead: bool,
        page: Page,
        filter: &DeadFilter<T>,
    ) -> Result<Vec<StoredItem>, OpenError> {
        let now = wall_nanos(SystemTime::now());
        let after = page
            .after
            .map_or(-1, |id| i64::try_from(id.get()).unwrap_or(i64::MAX));
        let limit = i64::try_from(page.limit).unwrap_or(i64::MAX);
        let reason = filter.wanted_reason().map(|r| i64::from(r.code()));
        let head = filter.kind_head();
        let columns = row_columns(self.with_progress);
        let mut st = self
            .conn
            .prepare(&format!(
                "SELECT {columns} FROM items WHERE dead = ?2 AND id > ?3
               AND (?5 IS NULL OR reason = ?5)
               AND (?6 IS NULL OR substr(payload, 1, length(?6)) = ?6)
             ORDER BY id LIMIT ?4"
            ))
            .map_err(|e| self.sql(e))?;
        let mut rows = st
            .query(rusqlite::params![
                i64::MAX,
                dead,
                after,
                limit,
                reason,
                head
            ])
            .map_err(|e| self.sql(e))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.sql(e))? {
            out.push(stored(read_row(&self.path, row)?, now));
        }
        Ok(out)
    }

    /// The record of finished jobs that `query` asks for, oldest first: what a queue opened
    /// with [`Options::retention`](crate::Options::retention) kept (none in a file of a
    /// format before 6).
    pub fn history(&self, query: &HistoryQuery) -> Result<Vec<Finished>, OpenError> {
        crate::history::read(&self.path, &self.conn, self.version, query)
    }

    /// What SQLite said about this file, typed.
    fn sql(&self, e: rusqlite::Error) -> OpenError {
        OpenError::from_sqlite(&self.path, e)
    }
}

/// The error for a file that is not there (the system's own error as the cause).
fn not_found(path: &Path) -> OpenError {
    let missing = std::fs::metadata(path)
        .err()
        .unwrap_or_else(|| std::io::ErrorKind::NotFound.into());
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let why = match dir {
        Some(dir) if !dir.exists() => format!("its directory {} does not exist", dir.display()),
        _ => String::new(),
    };
    OpenError::NotFound(FileError::new(path, why, Some(Box::new(missing))))
}

/// A row as the inspector shows it (its payload always loaded).
fn stored(r: Row, now: i64) -> StoredItem {
    let state = if r.dead {
        StoredState::Dead
    } else if r.leased {
        StoredState::InFlight
    } else if r.visible_at > now {
        StoredState::Delayed
    } else {
        StoredState::Ready
    };
    let mut item = StoredItem::new(MessageId::new(r.id), state, r.payload.len() as u64);
    item.attempts = r.attempts;
    item.priority = r.priority;
    item.key = r.key;
    item.payload = Some(r.payload);
    item.visible_at = (state == StoredState::Delayed).then(|| wall_time(r.visible_at));
    item.expires_at = r.expires_at.map(wall_time);
    item.last_error = r.last_error;
    if r.dead {
        item.reason = r
            .reason
            .and_then(|c| u8::try_from(c).ok())
            .and_then(Reason::from_code);
        item.dead_at = r.dead_at.map(wall_time);
    }
    item
}

/// Nanoseconds since the Unix epoch, as the file keeps times.
fn wall_nanos(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// A time of the file as a `SystemTime`.
fn wall_time(ns: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(ns.max(0) as u64)
}
