//! [`OpenError`]: why a queue file could not be opened, each refusal naming the file and
//! chaining its cause ([`FileError`]). Every refusal leaves the directory as it was found:
//! the database file byte-identical, and no `-wal`, `-shm` or `-lock` file it did not have.

use std::error::Error;
use std::fmt;
use std::path::{Path, PathBuf};

use leaseq_async::{CodecError, NewQueueError};
use leaseq_core::{ConfigError, RestoreError};
use rusqlite::ErrorCode;

/// Why a queue file could not be opened. Nothing was written to the database file when
/// the check of its format, its owner lock or its rows failed, and no file is left beside
/// it that was not there before. Each variant about the file names it; the error under it
/// (the system's, SQLite's, the codec's) is its [`source`](Error::source).
#[derive(Debug)]
#[non_exhaustive]
pub enum OpenError {
    /// The file exists but is not a leaseq queue: not SQLite, empty (zero bytes: remove it
    /// to start a new queue), or another application's database.
    NotAQueue(FileError),
    /// The file is a SQLite database, but damaged or cut short (`SQLITE_CORRUPT`,
    /// `SQLITE_NOTADB`, a header shorter than SQLite's): restore it from a backup.
    Corrupt(FileError),
    /// The file, its directory or its filesystem is read-only to this process (permission
    /// denied, a read-only mount): a queue writes its file and, beside it, its `-wal`,
    /// `-shm` and `-lock` files.
    ReadOnly(FileError),
    /// Another owner holds the file: a queue open on it, in this process or another (its
    /// `<path>-lock` file), or another SQLite connection holding its lock past
    /// [`Options::busy_timeout`](crate::Options::busy_timeout). Retry once it closed.
    Locked(FileError),
    /// The directory the file would be in does not exist (nothing is created): make it
    /// first.
    NoDirectory(FileError),
    /// There is no such file to read ([`FileView::open`](crate::FileView::open): a queue's
    /// open makes a missing file).
    NotFound(FileError),
    /// The file was written by a newer format version than this one reads.
    NewerVersion {
        /// The file.
        path: PathBuf,
        /// The file's format version.
        found: i32,
        /// The newest this version reads.
        supported: i32,
    },
    /// A row of the file is not what this version writes (a `next_id` that is not a
    /// non-negative integer, a negative attempt count, ...).
    BadRow {
        /// The file.
        path: PathBuf,
        /// Which row (`meta next_id`, `item 17`, ...).
        row: String,
        /// What is wrong with it.
        why: String,
    },
    /// The configuration cannot work (checked before the file is touched).
    Config(ConfigError),
    /// An item's bytes could not be decoded.
    Decode {
        /// The file.
        path: PathBuf,
        /// The item.
        id: u64,
        /// The codec's error.
        error: CodecError,
    },
    /// The file's rows contradict each other.
    Restore {
        /// The file.
        path: PathBuf,
        /// What contradicts what.
        error: RestoreError,
    },
    /// No runtime was given and this thread is not inside one.
    NoRuntime,
    /// The system failed otherwise: the lock file or the writer thread could not be made,
    /// the file could not be read.
    Io(FileError),
    /// SQLite failed otherwise.
    Sqlite(FileError),
}

/// A refusal about one file: the file, what is wrong in words, and the error under it (the
/// system's [`std::io::Error`], SQLite's [`rusqlite::Error`]) as its
/// [`source`](Error::source), if any.
#[derive(Debug)]
pub struct FileError {
    path: PathBuf,
    why: String,
    cause: Option<Box<dyn Error + Send + Sync + 'static>>,
}

impl FileError {
    /// `why` about `path`, caused by `cause`.
    pub(crate) fn new(
        path: &Path,
        why: impl Into<String>,
        cause: Option<Box<dyn Error + Send + Sync + 'static>>,
    ) -> FileError {
        FileError {
            path: path.to_path_buf(),
            why: why.into(),
            cause,
        }
    }

    /// The same file and cause, with other words.
    pub(crate) fn with_why(self, why: impl Into<String>) -> FileError {
        FileError {
            why: why.into(),
            ..self
        }
    }

    /// The file (the queue's database file: a sidecar such as its lock file is named in
    /// [`why`](Self::why)).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What is wrong, in words (may be empty: the cause then says it all).
    pub fn why(&self) -> &str {
        &self.why
    }

    /// ` (why)`, or nothing when there are no words.
    fn because(&self) -> String {
        if self.why.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.why)
        }
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.path.display(), self.because())
    }
}

impl Error for FileError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.cause.as_deref().map(|e| e as _)
    }
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
    /// `path` cannot be written: `why`, caused by `cause`.
    pub(crate) fn read_only(
        path: &Path,
        why: impl Into<String>,
        cause: Option<Box<dyn Error + Send + Sync + 'static>>,
    ) -> OpenError {
        OpenError::ReadOnly(FileError::new(path, why, cause))
    }

    /// The typed answer for an I/O error on `path` (`why`: what was being done).
    pub(crate) fn io(path: &Path, why: impl Into<String>, e: std::io::Error) -> OpenError {
        use std::io::ErrorKind;
        let why = why.into();
        match e.kind() {
            ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => {
                OpenError::read_only(path, why, Some(Box::new(e)))
            }
            _ => OpenError::Io(FileError::new(path, why, Some(Box::new(e)))),
        }
    }

    /// The typed answer for what SQLite said while opening or reading the file at `path`.
    pub(crate) fn from_sqlite(path: &Path, e: rusqlite::Error) -> OpenError {
        let code = e.sqlite_error_code();
        let cause = Some(Box::new(e) as Box<dyn Error + Send + Sync>);
        match code {
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
                OpenError::Corrupt(FileError::new(path, "", cause))
            }
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => OpenError::Locked(
                FileError::new(path, "another SQLite connection holds its lock", cause),
            ),
            Some(ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => {
                OpenError::read_only(path, "", cause)
            }
            _ => OpenError::Sqlite(FileError::new(path, "", cause)),
        }
    }

    /// The file this error is about, if it is about one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            OpenError::NotAQueue(f)
            | OpenError::Corrupt(f)
            | OpenError::ReadOnly(f)
            | OpenError::Locked(f)
            | OpenError::NoDirectory(f)
            | OpenError::NotFound(f)
            | OpenError::Io(f)
            | OpenError::Sqlite(f) => Some(f.path()),
            OpenError::NewerVersion { path, .. }
            | OpenError::BadRow { path, .. }
            | OpenError::Decode { path, .. }
            | OpenError::Restore { path, .. } => Some(path),
            OpenError::Config(_) | OpenError::NoRuntime => None,
        }
    }
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::NotAQueue(e) => write!(
                f,
                "{} is not a leaseq queue file{}",
                e.path.display(),
                e.because()
            ),
            OpenError::Corrupt(e) => write!(
                f,
                "the queue file {} is damaged or truncated{}: restore it from a backup",
                e.path.display(),
                e.because()
            ),
            OpenError::ReadOnly(e) => write!(
                f,
                "the queue file {} cannot be written{}: a queue needs to write its file and, \
                 beside it, its -wal, -shm and -lock files",
                e.path.display(),
                e.because()
            ),
            OpenError::Locked(e) => write!(
                f,
                "the queue file {} is in use{}: retry once its owner closed it",
                e.path.display(),
                e.because()
            ),
            OpenError::NoDirectory(e) => write!(
                f,
                "the queue file {} cannot be made{}: create the directory first",
                e.path.display(),
                e.because()
            ),
            OpenError::NotFound(e) => write!(
                f,
                "there is no queue file {}{}",
                e.path.display(),
                e.because()
            ),
            OpenError::NewerVersion {
                path,
                found,
                supported,
            } => write!(
                f,
                "the queue file {} has format version {found}, newer than this version \
                 reads ({supported}): open it with a newer leaseq-sqlite",
                path.display()
            ),
            OpenError::BadRow { path, row, why } => write!(
                f,
                "bad row in the queue file {} ({row}): {why}",
                path.display()
            ),
            OpenError::Config(_) => f.write_str("invalid queue configuration"),
            OpenError::NoRuntime => write!(f, "no runtime given, and not inside one"),
            OpenError::Decode { path, id, .. } => write!(
                f,
                "item #{id} of the queue file {} does not decode with this queue's codec",
                path.display()
            ),
            OpenError::Restore { path, .. } => write!(
                f,
                "the rows of the queue file {} contradict each other",
                path.display()
            ),
            OpenError::Io(e) => write!(f, "I/O error on the queue file {e}"),
            OpenError::Sqlite(e) => write!(f, "SQLite failed on the queue file {e}"),
        }
    }
}

impl Error for OpenError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            OpenError::NotAQueue(e)
            | OpenError::Corrupt(e)
            | OpenError::ReadOnly(e)
            | OpenError::Locked(e)
            | OpenError::NoDirectory(e)
            | OpenError::NotFound(e)
            | OpenError::Io(e)
            | OpenError::Sqlite(e) => e.source(),
            OpenError::Config(e) => Some(e),
            OpenError::Decode { error, .. } => Some(error),
            OpenError::Restore { error, .. } => Some(error),
            OpenError::NewerVersion { .. } | OpenError::BadRow { .. } | OpenError::NoRuntime => {
                None
            }
        }
    }
}
