//! The check of a queue file before anything is written to it: SQLite's header, then a
//! read-only connection for the application id, the format version and the magic row; the
//! open reads every row on that connection ([`Reader`]) before its own writes anything.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::open_error::{FileError, OpenError};

/// `PRAGMA application_id` of a leaseq queue file ("LQ01" in ASCII).
pub const APPLICATION_ID: i32 = 0x4c51_3031;
/// The file format this version writes and reads (`PRAGMA user_version`): 6 (version 1,
/// without the `progress` column of handlers' checkpoints, version 2, without the
/// `schedules` table, version 3, without the pause flag, and version 5, without the
/// `history` table of finished jobs, are migrated at open; 4 was never written).
pub const FORMAT_VERSION: i32 = crate::graph::GRAPH_VERSION;
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
    check(path, Duration::from_secs(5)).map(|checked| checked.is_some())
}

/// [`check_file`], with the file's format version and the read-only connection that read
/// it (`None`: no file). Nothing is left beside the file that was not there, and nothing
/// there is written (on Unix; elsewhere the file is opened read-only as it is):
///
/// - without a `-wal`, the file is read `immutable`: SQLite then makes no `-wal` or `-shm`,
///   which a read-only connection would leave behind (the file is all there is to read);
/// - with a `-wal` and a `-shm` (a running owner's, or what a crash left), SQLite reads
///   through the `-wal` with the `-shm` mapped read-only (`readonly_shm`): a `-shm` no live
///   process maps is not rebuilt, the `-wal` is read into memory instead;
/// - with a `-wal` and no `-shm` (a copy, or a `-shm` removed), SQLite must make a `-shm`
///   to read through the `-wal`: the [`Reader`] removes it when dropped (unless another
///   process has mapped it since).
pub(crate) fn check(
    path: &Path,
    busy_timeout: Duration,
) -> Result<Option<(i32, Reader)>, OpenError> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(OpenError::io(path, "cannot open it to read", e)),
    };
    let read = |e| OpenError::io(path, "cannot read it", e);
    let len = file.metadata().map_err(read)?.len();
    if len == 0 {
        return Err(not_a_queue(
            path,
            "it is empty (zero bytes): remove it to start a new queue there",
        ));
    }
    let mut head = Vec::with_capacity(16);
    file.by_ref()
        .take(16)
        .read_to_end(&mut head)
        .map_err(read)?;
    drop(file);
    if !SQLITE_HEADER.starts_with(&head) || (head.len() == 16 && head[..] != SQLITE_HEADER[..]) {
        return Err(not_a_queue(path, "it is not a SQLite database"));
    }
    if len < HEADER_LEN {
        return Err(OpenError::Corrupt(FileError::new(
            path,
            format!("{len} bytes, shorter than a SQLite header"),
            None,
        )));
    }
    let sql = |e| OpenError::from_sqlite(path, e);
    let conn = Reader::open(path).map_err(sql)?;
    conn.busy_timeout(busy_timeout).map_err(sql)?;
    let app: i32 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(sql)?;
    if app != APPLICATION_ID {
        return Err(not_a_queue(
            path,
            format!("it is another application's SQLite database (application id {app:#x}, not {APPLICATION_ID:#x})"),
        ));
    }
    let version: i32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(sql)?;
    if version > FORMAT_VERSION {
        return Err(OpenError::NewerVersion {
            path: path.to_path_buf(),
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    let magic: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'magic'", [], |r| {
            r.get(0)
        })
        .map_err(|e| match OpenError::from_sqlite(path, e) {
            // No `meta` table, no magic row, a magic that is not text.
            OpenError::Sqlite(e) => OpenError::NotAQueue(e.with_why("it has no leaseq magic")),
            typed => typed,
        })?;
    if magic.as_deref() != Some(MAGIC) {
        return Err(not_a_queue(path, "it has no leaseq magic"));
    }
    Ok(Some((version, conn)))
}

/// A read-only connection to a queue file, as [`check`] opened it: the open reads every row
/// on it before anything is written. Dropped, it removes the `-shm` SQLite made for it.
pub(crate) struct Reader {
    conn: Connection,
    /// Dropped after `conn` (fields drop in order), once SQLite has let go of the file.
    _made_shm: MadeShm,
}

/// The `-shm` SQLite makes to read through a `-wal` found without one, removed when dropped
/// (keep it beside the connection, after it: fields drop in order).
#[derive(Debug)]
pub(crate) struct MadeShm(Option<PathBuf>);

impl MadeShm {
    /// Taken before a connection to `path` is opened: the `-shm` it will make, if the file
    /// has a `-wal` and no `-shm`.
    pub(crate) fn before_open(path: &Path) -> MadeShm {
        let shm = sidecar(path, "-shm");
        MadeShm((sidecar(path, "-wal").exists() && !shm.exists()).then_some(shm))
    }
}

impl Reader {
    /// Opens `path` read-only as [`check`] says.
    fn open(path: &Path) -> rusqlite::Result<Reader> {
        let read_only = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let uri = read_only | OpenFlags::SQLITE_OPEN_URI;
        let made_shm = MadeShm::before_open(path);
        let (wal, shm) = (
            sidecar(path, "-wal").exists(),
            sidecar(path, "-shm").exists(),
        );
        let conn = match (wal, shm, cfg!(unix)) {
            (_, _, false) | (true, false, true) => Connection::open_with_flags(path, read_only)?,
            (false, _, true) => Connection::open_with_flags(uri_of(path, "immutable=1"), uri)?,
            (true, true, true) => Connection::open_with_flags(uri_of(path, "readonly_shm=1"), uri)?,
        };
        Ok(Reader {
            conn,
            _made_shm: made_shm,
        })
    }
}

impl std::ops::Deref for Reader {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl Drop for MadeShm {
    fn drop(&mut self) {
        if let Some(shm) = &self.0 {
            remove_if_unmapped(shm);
        }
    }
}

/// Removes the `-shm` at `shm` unless a process maps it: SQLite holds a read lock on it
/// while it does (its "dead man switch" byte), so a write lock on the whole file, not
/// waited for, is taken first. Our own connection is closed by then; closing the file
/// here would release the locks of another connection of this process on it, but one that
/// maps a `-shm` made a moment ago by a check is not expected.
#[cfg(unix)]
fn remove_if_unmapped(shm: &Path) {
    use rustix::fs::{fcntl_lock, FlockOperation};
    let Ok(file) = std::fs::OpenOptions::new().read(true).write(true).open(shm) else {
        return;
    };
    if fcntl_lock(&file, FlockOperation::NonBlockingLockExclusive).is_ok() {
        let _ = std::fs::remove_file(shm);
    }
}

#[cfg(not(unix))]
fn remove_if_unmapped(_shm: &Path) {}

fn not_a_queue(path: &Path, why: impl Into<String>) -> OpenError {
    OpenError::NotAQueue(FileError::new(path, why, None))
}

/// The file `<path><suffix>` (`-wal`, `-shm`, `-lock`).
pub(crate) fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// `file:<path>?<query>`, the path's bytes percent-encoded but for unreserved ones and `/`
/// (SQLite's URI filenames, as Unix paths are written).
fn uri_of(path: &Path, query: &str) -> String {
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push('?');
    uri.push_str(query);
    uri
}
