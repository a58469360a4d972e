//! [`OpenError`]: why a queue file could not be opened. Every refusal before the queue
//! starts leaves the database file byte-identical.

use std::fmt;
use std::path::Path;

use leaseq_async::{CodecError, NewQueueError};
use leaseq_core::{ConfigError, RestoreError};
use rusqlite::ErrorCode;

/// Why a queue file could not be opened. Nothing was written to the database file when
/// the check of its format, its owner lock or its rows failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum OpenError {
    /// The file exists but is not a leaseq queue: not SQLite, empty (zero bytes: remove it
    /// to start a new queue), or another application's database.
    NotAQueue(String),
    /// The file is a SQLite database, but damaged or cut short (`SQLITE_CORRUPT`,
    /// `SQLITE_NOTADB`, a header shorter than SQLite's): restore it from a backup.
    Corrupt(String),
    /// The file or its filesystem is read-only to this process: a queue needs to write.
    ReadOnly(String),
    /// Another owner holds the file: a queue open on it, in this process or another (its
    /// `<path>-lock` file), or another SQLite connection holding its lock past
    /// [`Options::busy_timeout`](crate::Options::busy_timeout). Retry once it closed.
    Locked(String),
    /// The file was written by a newer format version than this one reads.
    NewerVersion {
        /// The file's format version.
        found: i32,
        /// The newest this version reads.
        supported: i32,
    },
    /// A row of the file is not what this version writes (a `next_id` that is not a
    /// non-negative integer, a negative attempt count, ...).
    BadRow {
        /// Which row (`meta next_id`, `item 17`, ...).
        row: String,
        /// What is wrong with it.
        why: String,
    },
    /// The configuration cannot work.
    Config(ConfigError),
    /// An item's bytes could not be decoded.
    Decode {
        /// The item.
        id: u64,
        /// The codec's error.
        error: CodecError,
    },
    /// The file's rows contradict each other.
    Restore(RestoreError),
    /// No runtime was given and this thread is not inside one.
    NoRuntime,
    /// The lock file or the writer thread could not be made.
    Io(std::io::Error),
    /// SQLite failed otherwise.
    Sqlite(rusqlite::Error),
}

impl From<NewQueueError> for OpenError {
    fn from(e: NewQueueError) -> Self {
        match e {
            NewQueueError::Config(e) => OpenError::Config(e),
            _ => OpenError::NoRuntime,
        }
    }
}

impl OpenError {
    pub(crate) fn read_only(path: &Path, e: impl fmt::Display) -> OpenError {
        OpenError::ReadOnly(format!("{}: {e}", path.display()))
    }

    /// The typed answer for what SQLite said while opening or reading the file.
    pub(crate) fn from_sqlite(e: rusqlite::Error) -> OpenError {
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
                OpenError::Corrupt(e.to_string())
            }
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => OpenError::Locked(
                format!("another SQLite connection holds the file's lock: {e}"),
            ),
            Some(ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => {
                OpenError::ReadOnly(e.to_string())
            }
            _ => OpenError::Sqlite(e),
        }
    }
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::NotAQueue(why) => write!(f, "not a leaseq queue file: {why}"),
            OpenError::Corrupt(why) => write!(
                f,
                "the queue file is damaged or truncated (restore it from a backup): {why}"
            ),
            OpenError::ReadOnly(why) => write!(f, "the queue file cannot be written: {why}"),
            OpenError::Locked(why) => write!(f, "the queue file is in use: {why}"),
            OpenError::NewerVersion { found, supported } => write!(
                f,
                "queue file format version {found} is newer than this version reads ({supported})"
            ),
            OpenError::BadRow { row, why } => write!(f, "bad row in the queue file ({row}): {why}"),
            OpenError::Config(e) => write!(f, "invalid config: {e:?}"),
            OpenError::NoRuntime => write!(f, "no runtime given, and not inside one"),
            OpenError::Decode { id, error } => write!(f, "item #{id}: {error}"),
            OpenError::Restore(e) => write!(f, "{e}"),
            OpenError::Io(e) => write!(f, "{e}"),
            OpenError::Sqlite(e) => write!(f, "sqlite: {e}"),
        }
    }
}

impl std::error::Error for OpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OpenError::Io(e) => Some(e),
            OpenError::Sqlite(e) => Some(e),
            _ => None,
        }
    }
}

impl From<rusqlite::Error> for OpenError {
    fn from(e: rusqlite::Error) -> Self {
        OpenError::from_sqlite(e)
    }
}
