//! One owner per queue file: an exclusive `flock` on a sidecar file `<path>-lock` (as
//! RocksDB's `LOCK`), taken before the database is opened or created and held by the
//! writer thread until it has closed the connection. `flock` locks belong to an open file
//! description, so a second open in the same process is refused as well as one from
//! another process; the OS releases the lock when the owner's process dies, `kill -9`
//! included. The lock file itself stays (removing it would race with the next opener).
//!
//! One wait: a queue of this process whose last handle is gone is *closing* (its store is
//! released by whoever holds it last, the driver's step or a delivery, then its writer
//! closes the file). An open that finds the lock held by a closing owner of this process
//! waits for it (bounded), so that dropping a queue and opening its file again works; any
//! other holder is refused at once. The owners of this process are in `OWNERS`, by the
//! lock file's canonical path.
//!
//! Chosen over SQLite's `locking_mode = EXCLUSIVE`: that mode takes its lock only at the
//! first read or write, after the opener has already touched the file (a WAL recovery, a
//! schema write), and a second opener then meets a busy timeout rather than a clear answer.
//! On non-Unix systems there is no owner lock (documented in the crate's limits).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::open_error::OpenError;

/// The queue files this process owns, by canonical lock path: whether each owner is
/// closing. Written by `take` and `OwnerLock::drop`.
static OWNERS: Mutex<BTreeMap<PathBuf, Arc<AtomicBool>>> = Mutex::new(BTreeMap::new());

/// The held lock; released when dropped (its file is closed).
#[derive(Debug)]
pub(crate) struct OwnerLock {
    file: Option<File>,
    key: PathBuf,
    closing: Arc<AtomicBool>,
}

/// The lock file of the queue file at `path`.
pub(crate) fn lock_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push("-lock");
    PathBuf::from(p)
}

fn owners() -> std::sync::MutexGuard<'static, BTreeMap<PathBuf, Arc<AtomicBool>>> {
    OWNERS.lock().unwrap_or_else(|e| e.into_inner())
}

impl OwnerLock {
    /// Set once the owner's last handle is gone: an opener of this process may wait for
    /// the lock.
    pub(crate) fn closing(&self) -> Arc<AtomicBool> {
        self.closing.clone()
    }

    /// Takes the lock of the queue file at `path`, or says who holds it; waits up to
    /// `wait` for a closing owner of this process. A new lock file gets `mode`
    /// ([`Options::file_mode`](crate::Options::file_mode)).
    #[cfg(unix)]
    pub(crate) fn take(path: &Path, wait: Duration, mode: u32) -> Result<OwnerLock, OpenError> {
        use rustix::fs::{flock, FlockOperation};
        use std::io::ErrorKind;
        use std::os::unix::fs::OpenOptionsExt;
        let lock = lock_path(path);
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(mode)
            .open(&lock)
        {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Err(OpenError::Io(e)),
            // A read-only file or filesystem: an existing lock file can still be locked
            // (the database then opens read-only, and that is refused later).
            Err(e) => match File::open(&lock) {
                Ok(f) => f,
                Err(_) => return Err(OpenError::read_only(&lock, e)),
            },
        };
        let key = std::fs::canonicalize(&lock).unwrap_or_else(|_| lock.clone());
        let deadline = Instant::now() + wait;
        loop {
            match flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => {
                    let closing = Arc::new(AtomicBool::new(false));
                    owners().insert(key.clone(), closing.clone());
                    return Ok(OwnerLock {
                        file: Some(file),
                        key,
                        closing,
                    });
                }
                Err(rustix::io::Errno::WOULDBLOCK) => {
                    let closing = owners()
                        .get(&key)
                        .is_some_and(|c| c.load(Ordering::Acquire));
                    if !closing || Instant::now() >= deadline {
                        return Err(OpenError::Locked(format!(
                            "another open queue holds {} (in this process or another)",
                            lock.display()
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(e) => return Err(OpenError::Io(e.into())),
            }
        }
    }

    /// No owner lock on this system.
    #[cfg(not(unix))]
    pub(crate) fn take(path: &Path, _wait: Duration, _mode: u32) -> Result<OwnerLock, OpenError> {
        Ok(OwnerLock {
            file: None,
            key: lock_path(path),
            closing: Arc::new(AtomicBool::new(false)),
        })
    }
}

impl Drop for OwnerLock {
    fn drop(&mut self) {
        // The lock first, then the entry: an opener waiting on the entry finds it free.
        drop(self.file.take());
        let mut owners = owners();
        if owners
            .get(&self.key)
            .is_some_and(|c| Arc::ptr_eq(c, &self.closing))
        {
            owners.remove(&self.key);
        }
    }
}
