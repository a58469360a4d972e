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
//! And one more: a lock this process let go of in the last [`RELEASED_GRACE`] may still be
//! held for a moment by a child process this process is spawning (the child has a copy of
//! every descriptor, the lock file's included, from its fork until its exec closes them:
//! a `flock` is released only when every copy is closed). An open that finds such a lock
//! held waits for it too (bounded as above), so that closing a queue and opening its file
//! again works while another thread spawns processes.
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

/// The queue files whose lock this process let go of in the last [`RELEASED_GRACE`], by
/// canonical lock path, with when. Written by `OwnerLock::drop`, pruned by it.
static RELEASED: Mutex<BTreeMap<PathBuf, Instant>> = Mutex::new(BTreeMap::new());

/// How long after this process let go of a lock an open still waits for it (a spawning
/// child's copy of the descriptor lives from its fork to its exec: far less than this).
const RELEASED_GRACE: Duration = Duration::from_secs(1);

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

fn released() -> std::sync::MutexGuard<'static, BTreeMap<PathBuf, Instant>> {
    RELEASED.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(unix)]
/// Whether the lock at `key` is held by an owner of this process that is closing, or was
/// let go of by this process within [`RELEASED_GRACE`]: worth waiting for.
fn held_by_this_process(key: &Path) -> bool {
    owners().get(key).is_some_and(|c| c.load(Ordering::Acquire))
        || released()
            .get(key)
            .is_some_and(|at| at.elapsed() < RELEASED_GRACE)
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
                        if !held_by_this_process(&key) || Instant::now() >= deadline {
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
        drop(owners);
        let mut released = released();
        released.retain(|_, at| at.elapsed() < RELEASED_GRACE);
        released.insert(self.key.clone(), Instant::now());
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A lock this process let go of while a copy of its descriptor lives on (as in a
    /// child between its fork and its exec) is waited for, not refused: the copy is closed
    /// by another thread a moment later, and the open then holds the lock. A lock held by
    /// an owner that is not closing is still refused at once.
    #[test]
    fn a_lock_just_let_go_of_is_waited_for_while_a_copy_lives() {
        let dir = std::env::temp_dir().join(format!("leaseq-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("q.db");
        let first = OwnerLock::take(&path, Duration::ZERO, 0o600).unwrap();
        assert!(matches!(
            OwnerLock::take(&path, Duration::from_secs(5), 0o600),
            Err(OpenError::Locked(_))
        ));
        let copy = first.file.as_ref().unwrap().try_clone().unwrap();
        drop(first);
        let closer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            drop(copy);
        });
        let second = OwnerLock::take(&path, Duration::from_secs(30), 0o600);
        closer.join().unwrap();
        assert!(second.is_ok(), "{second:?}");
        drop(second);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
