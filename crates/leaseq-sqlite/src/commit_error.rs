//! [`CommitError`]: why the writer's last commit failed, as the operator reads it
//! ([`SqliteStore::last_commit_error`](crate::SqliteStore::last_commit_error)) and as the
//! errors of the operations that waited on it say it.

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use rusqlite::ErrorCode;

/// What kind of failure a commit met.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CommitErrorKind {
    /// The disk (or the database's `max_page_count`) is full: `SQLITE_FULL`.
    DiskFull,
    /// Another connection held the database's write lock longer than
    /// [`Options::busy_timeout`](crate::Options::busy_timeout): `SQLITE_BUSY`,
    /// `SQLITE_LOCKED`.
    Locked,
    /// The file or its filesystem became read-only: `SQLITE_READONLY`, `SQLITE_PERM`.
    ReadOnly,
    /// The file is damaged: `SQLITE_CORRUPT`, `SQLITE_NOTADB`.
    Corrupt,
    /// An I/O error (`SQLITE_IOERR`, `SQLITE_CANTOPEN`, ...).
    Io,
    /// Anything else SQLite reported.
    Other,
}

/// Why the writer's last commit failed. Cheap to clone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitError {
    /// What kind of failure.
    pub kind: CommitErrorKind,
    /// SQLite's own words.
    pub message: Arc<str>,
    /// When it failed (wall clock).
    pub at: SystemTime,
}

impl CommitError {
    pub(crate) fn from_sqlite(e: &rusqlite::Error) -> CommitError {
        let kind = match e.sqlite_error_code() {
            Some(ErrorCode::DiskFull) => CommitErrorKind::DiskFull,
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => CommitErrorKind::Locked,
            Some(ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => CommitErrorKind::ReadOnly,
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => CommitErrorKind::Corrupt,
            Some(ErrorCode::SystemIoFailure | ErrorCode::CannotOpen) => CommitErrorKind::Io,
            _ => CommitErrorKind::Other,
        };
        CommitError {
            kind,
            message: e.to_string().into(),
            at: SystemTime::now(),
        }
    }
}

impl fmt::Display for CommitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            CommitErrorKind::DiskFull => "disk full",
            CommitErrorKind::Locked => "database locked by another connection",
            CommitErrorKind::ReadOnly => "file read-only",
            CommitErrorKind::Corrupt => "file corrupt",
            CommitErrorKind::Io => "I/O error",
            CommitErrorKind::Other => "commit failed",
        };
        write!(f, "{what} (SQLite: {})", self.message)
    }
}

impl std::error::Error for CommitError {}
