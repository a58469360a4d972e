//! One owner per queue file: an exclusive `flock` on a sidecar file `<path>-lock` (as
//! RocksDB's `LOCK`), taken before the database is opened or created and held by the
//! writer thread until it has closed the connection. `flock` locks belong to an open file
//! description, so a second open in the same process is refused as well as one from
//! another process; the OS releases the lock when the owner's process dies, `kill -9`
//! included. The lock file itself stays (removing it would race with the next opener).
//!
//! Chosen over SQLite's `locking_mode = EXCLUSIVE`: that mode takes its lock only at the
//! first read or write, after the opener has already touched the file (a WAL recovery, a
//! schema write), and a second opener then meets a busy timeout rather than a clear answer.
//! On non-Unix systems there is no owner lock (documented in the crate's limits).

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::open_error::OpenError;

/// The held lock; released when dropped (its file is closed).
#[derive(Debug)]
pub(crate) struct OwnerLock {
    _file: Option<File>,
}

/// The lock file of the queue file at `path`.
pub(crate) fn lock_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push("-lock");
    PathBuf::from(p)
}

impl OwnerLock {
    /// Takes the lock of the queue file at `path`, or says who holds it.
    #[cfg(unix)]
    pub(crate) fn take(path: &Path) -> Result<OwnerLock, OpenError> {
        use rustix::fs::{flock, FlockOperation};
        use std::io::ErrorKind;
        let lock = lock_path(path);
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock)
        {
            Ok(f) => f,
            // A read-only file or filesystem: an existing lock file can still be locked
            // (the database then opens read-only, and that is refused later).
            Err(e) if e.kind() == ErrorKind::NotFound => return Err(OpenError::Io(e)),
            Err(e) => match File::open(&lock) {
                Ok(f) => f,
                Err(_) => return Err(OpenError::read_only(&lock, e)),
            },
        };
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(OwnerLock { _file: Some(file) }),
            Err(rustix::io::Errno::WOULDBLOCK) => Err(OpenError::Locked(format!(
                "another open queue holds {} (in this process or another)",
                lock.display()
            ))),
            Err(e) => Err(OpenError::Io(e.into())),
        }
    }

    /// No owner lock on this system.
    #[cfg(not(unix))]
    pub(crate) fn take(_path: &Path) -> Result<OwnerLock, OpenError> {
        Ok(OwnerLock { _file: None })
    }
}
