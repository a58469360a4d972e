//! [`FileView::open`](crate::FileView::open)'s retry: an open that meets `SQLITE_CANTOPEN`
//! (the moment an owner closing the file removes its `-wal` and `-shm`) is tried again for
//! up to 5 s, as a busy file is waited for. With the `fault-injection` feature, the next
//! opens on a thread can be made to meet it ([`FileView::fail_opens`](crate::FileView::fail_opens)).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::open_error::{FileError, OpenError};

/// How long an open that meets `SQLITE_CANTOPEN` is tried again.
const GIVE_UP_AFTER: Duration = Duration::from_secs(5);

/// The pause between two tries.
const PAUSE: Duration = Duration::from_millis(10);

/// `open` tried until it succeeds, fails otherwise, or has met `SQLITE_CANTOPEN` for
/// [`GIVE_UP_AFTER`] (then that error).
pub(crate) fn retrying<V>(
    path: &Path,
    open: impl Fn(&Path) -> Result<V, OpenError>,
) -> Result<V, OpenError> {
    let give_up = Instant::now() + GIVE_UP_AFTER;
    loop {
        #[cfg(feature = "fault-injection")]
        let done = match injected::take(path) {
            Some(e) => Err(e),
            None => open(path),
        };
        #[cfg(not(feature = "fault-injection"))]
        let done = open(path);
        match done {
            Err(OpenError::Sqlite(e)) if cannot_open(&e) && Instant::now() < give_up => {
                std::thread::sleep(PAUSE);
            }
            done => return done,
        }
    }
}

/// Whether `e` is SQLite's `SQLITE_CANTOPEN`.
fn cannot_open(e: &FileError) -> bool {
    use std::error::Error;
    e.source()
        .and_then(|c| c.downcast_ref::<rusqlite::Error>())
        .and_then(|c| c.sqlite_error_code())
        == Some(rusqlite::ErrorCode::CannotOpen)
}

/// The injected failures (the `fault-injection` feature).
#[cfg(feature = "fault-injection")]
pub(crate) mod injected {
    use std::cell::Cell;
    use std::path::Path;

    use crate::open_error::OpenError;

    thread_local! {
        /// How many of this thread's next tries fail with `SQLITE_CANTOPEN`.
        static LEFT: Cell<u32> = const { Cell::new(0) };
    }

    /// The next `n` tries on this thread fail with `SQLITE_CANTOPEN` (replacing any left).
    pub(crate) fn set(n: u32) {
        LEFT.set(n);
    }

    /// How many injected failures are left on this thread.
    pub(crate) fn left() -> u32 {
        LEFT.get()
    }

    /// An injected failure for this try, if one is left.
    pub(super) fn take(path: &Path) -> Option<OpenError> {
        let n = LEFT.get();
        if n == 0 {
            return None;
        }
        LEFT.set(n - 1);
        let e = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
            Some("injected".into()),
        );
        Some(OpenError::from_sqlite(path, e))
    }
}
