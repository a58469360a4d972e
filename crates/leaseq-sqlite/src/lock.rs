//! One owner per queue file: an exclusive `flock` on a sidecar file `<path>-lock` (as
//! RocksDB's `LOCK`), taken before the database is opened or created and held by the
//! writer thread until it has closed the connection. `flock` locks belong to an open file
//! description, so a second open in the same process is refused as well as one from
//! another process; the OS releases the lock when the owner's process dies, `kill -9`
//! included. The lock file stays after its owner (removing it then would race with the
//! next opener), but one made by an open that is then refused is removed, still locked, so
//! a refused open leaves the directory as it found it; every opener checks, once it holds
//! the lock, that the path still names the file it locked (else it starts over).
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

use crate::open_error::{FileError, OpenError};

/// The queue files this process owns, by canonical lock path: whether each owner is
/// closing. Written by `take` and `OwnerLock::drop`.
static OWNERS: Mutex<BTreeMap<PathBuf, Arc<AtomicBool>>> = Mutex::new(BTreeMap::new());

/// The held lock; released when dropped (its file is closed).
#[derive(Debug)]
pub(crate) struct OwnerLock {
    file: Option<File>,
    /// The lock file's canonical path.
    key: PathBuf,
    closing: Arc<AtomicBool>,
    /// The lock file did not exist before this open made it.
    created: bool,
    /// Where the lock file is.
    lock: PathBuf,
}

/// The lock file of the queue file at `path`.
pub(crate) fn lock_path(path: &Path) -> PathBuf {
    crate::check::sidecar(path, "-lock")
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
    ///
    /// A lock file made here is removed again by [`discard`](Self::discard) when the open
    /// is refused. So an opener that locked a file description a refused opener had just
    /// unlinked checks, once it holds the lock, that the path still names what it locked,
    /// and starts over if not.
    #[cfg(unix)]
    pub(crate) fn take(path: &Path, wait: Duration, mode: u32) -> Result<OwnerLock, OpenError> {
        use rustix::fs::{flock, FlockOperation};
        let lock = lock_path(path);
        let deadline = Instant::now() + wait;
        loop {
            let (file, created) = open_lock_file(path, &lock, mode)?;
            let key = std::fs::canonicalize(&lock).unwrap_or_else(|_| lock.clone());
            loop {
                match flock(&file, FlockOperation::NonBlockingLockExclusive) {
                    Ok(()) => break,
                    Err(rustix::io::Errno::WOULDBLOCK) => {
                        let closing = owners()
                            .get(&key)
                            .is_some_and(|c| c.load(Ordering::Acquire));
                        if !closing || Instant::now() >= deadline {
                            return Err(OpenError::Locked(FileError::new(
                                path,
                                format!(
                                    "another open queue holds {}, in this process or another",
                                    lock.display()
                                ),
                                Some(Box::new(std::io::Error::from(
                                    rustix::io::Errno::WOULDBLOCK,
                                ))),
                            )));
                        }
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    Err(e) => {
                        return Err(OpenError::io(
                            path,
                            format!("cannot lock {}", lock.display()),
                            e.into(),
                        ))
                    }
                }
            }
            if !still_named(&file, &lock) {
                continue;
            }
            let closing = Arc::new(AtomicBool::new(false));
            owners().insert(key.clone(), closing.clone());
            return Ok(OwnerLock {
                file: Some(file),
                key,
                closing,
                created,
                lock,
            });
        }
    }

    /// No owner lock on this system.
    #[cfg(not(unix))]
    pub(crate) fn take(path: &Path, _wait: Duration, _mode: u32) -> Result<OwnerLock, OpenError> {
        Ok(OwnerLock {
            file: None,
            key: lock_path(path),
            closing: Arc::new(AtomicBool::new(false)),
            created: false,
            lock: lock_path(path),
        })
    }

    /// Lets go of the lock of a refused open: a lock file this open made is removed first
    /// (while still held), so the directory is left as it was found.
    pub(crate) fn discard(self) {
        if self.created {
            let _ = std::fs::remove_file(&self.lock);
        }
    }
}

/// The lock file at `lock` (of the queue file at `path`), made with `mode` if missing:
/// the file, and whether this call made it.
#[cfg(unix)]
fn open_lock_file(path: &Path, lock: &Path, mode: u32) -> Result<(File, bool), OpenError> {
    use std::io::ErrorKind;
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).mode(mode);
    match options.clone().create_new(true).open(lock) {
        Ok(f) => return Ok((f, true)),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
            let why = match dir {
                Some(dir) => format!("its directory {} does not exist", dir.display()),
                None => String::new(),
            };
            return Err(OpenError::NoDirectory(FileError::new(
                path,
                why,
                Some(Box::new(e)),
            )));
        }
        // A read-only directory or filesystem: an existing lock file can still be locked
        // (the database then opens read-only, and that is refused later).
        Err(e) => {
            return match File::open(lock) {
                Ok(f) => Ok((f, false)),
                Err(_) => Err(OpenError::read_only(
                    path,
                    format!("cannot make its lock file {}", lock.display()),
                    Some(Box::new(e)),
                )),
            }
        }
    }
    match options.open(lock) {
        Ok(f) => Ok((f, false)),
        // Removed since (by a refused opener): make it again.
        Err(e) if e.kind() == ErrorKind::NotFound => open_lock_file(path, lock, mode),
        Err(e) => match File::open(lock) {
            Ok(f) => Ok((f, false)),
            Err(_) => Err(OpenError::io(
                path,
                format!("cannot open its lock file {}", lock.display()),
                e,
            )),
        },
    }
}

/// Whether `lock` still names the file `file` is open on (not removed or replaced since).
#[cfg(unix)]
fn still_named(file: &File, lock: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(lock)) {
        (Ok(held), Ok(named)) => held.dev() == named.dev() && held.ino() == named.ino(),
        _ => false,
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
