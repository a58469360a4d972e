//! The check of a queue file before anything is written to it: SQLite's header, then a
//! read-only connection for the application id, the format version and the magic row.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::open_error::OpenError;

/// `PRAGMA application_id` of a leaseq queue file ("LQ01" in ASCII).
pub const APPLICATION_ID: i32 = 0x4c51_3031;
/// The file format this version writes and reads (`PRAGMA user_version`): 3 (version 1,
/// without the `progress` column of handlers' checkpoints, and version 2, without the
/// `schedules` table, are migrated at open).
pub const FORMAT_VERSION: i32 = 3;
/// The first format with the `items.progress` column.
pub(crate) const PROGRESS_VERSION: i32 = 2;
/// The magic in the file's `meta` table.
pub(crate) const MAGIC: &str = "leaseq-sqlite";

/// The first 16 bytes of every SQLite database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";
/// The length of SQLite's database header.
const HEADER_LEN: u64 = 100;

/// Checks that `path` holds a leaseq queue this version reads, opening it read-only:
/// `Ok(false)` if it does not exist (a new queue). Refusals are typed: not a queue (not
/// SQLite, zero bytes, another application's database), corrupt or truncated, locked by
/// another connection (after SQLite's default busy timeout of 5 s), a newer version.
pub fn check_file(path: &Path) -> Result<bool, OpenError> {
    check(path, Duration::from_secs(5)).map(|version| version.is_some())
}

/// [`check_file`], with the file's format version (`None`: no file).
pub(crate) fn check(path: &Path, busy_timeout: Duration) -> Result<Option<i32>, OpenError> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return Err(OpenError::read_only(path, e))
        }
        Err(e) => return Err(OpenError::Io(e)),
    };
    let len = file.metadata().map_err(OpenError::Io)?.len();
    if len == 0 {
        return Err(OpenError::NotAQueue(
            "the file is empty (zero bytes); remove it to start a new queue".into(),
        ));
    }
    let mut head = Vec::with_capacity(16);
    file.by_ref()
        .take(16)
        .read_to_end(&mut head)
        .map_err(OpenError::Io)?;
    drop(file);
    if !SQLITE_HEADER.starts_with(&head) || (head.len() == 16 && head[..] != SQLITE_HEADER[..]) {
        return Err(OpenError::NotAQueue("not a SQLite database".into()));
    }
    if len < HEADER_LEN {
        return Err(OpenError::Corrupt(format!(
            "{len} bytes: shorter than a SQLite header"
        )));
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(busy_timeout)?;
    let app: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    if app != APPLICATION_ID {
        return Err(OpenError::NotAQueue(format!(
            "application id {app:#x}, not {APPLICATION_ID:#x}"
        )));
    }
    let version: i32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > FORMAT_VERSION {
        return Err(OpenError::NewerVersion {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    let magic: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'magic'", [], |r| {
            r.get(0)
        })
        .map_err(|e| match OpenError::from_sqlite(e) {
            // No `meta` table, no magic row, a magic that is not text.
            OpenError::Sqlite(e) => OpenError::NotAQueue(format!("no leaseq magic: {e}")),
            typed => typed,
        })?;
    if magic.as_deref() != Some(MAGIC) {
        return Err(OpenError::NotAQueue("no leaseq magic".into()));
    }
    Ok(Some(version))
}
