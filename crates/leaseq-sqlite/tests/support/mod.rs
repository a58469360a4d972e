//! What the SQLite tests share: temporary paths, opening a queue of bytes, re-running this
//! test binary as a child process.

#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

use leaseq_async::Config;
use leaseq_sqlite::{BytesCodec, OpenError, Options};

pub(crate) mod dir;
pub(crate) mod log;

#[allow(unused_imports)] // each test binary uses a part
pub(crate) use leaseq_test_kit::sqlite::{remove, temp, BytesQueue as Queue};

/// The core config of these tests.
pub(crate) fn config() -> Config {
    Config::new(Duration::from_secs(30)).with_max_attempts(5)
}

/// Opens `path` with `options`.
pub(crate) fn open_with(path: &Path, options: Options) -> Result<Queue, OpenError> {
    leaseq_test_kit::sqlite::open_with(path, config(), BytesCodec, options)
}

/// Opens `path` with the default options.
pub(crate) fn open_default(path: &Path) -> Result<Queue, OpenError> {
    open_with(path, Options::default())
}

/// Runs this test binary's test `name` alone as a child process, with `env`; returns its
/// exit status and what it printed.
pub(crate) fn run_child(
    name: &str,
    env: &[(&str, String)],
    uid: Option<u32>,
) -> (std::process::ExitStatus, String) {
    leaseq_test_kit::child::run(name, env, uid)
}

/// A child's part of a test: opens the file the environment variable `var` names (if set)
/// and prints `KIND <kind> (<error>)`, or `KIND opened`.
pub(crate) fn open_and_print_kind(var: &str) {
    let Some([path]) = leaseq_test_kit::child::vars("", [var]) else {
        return;
    };
    match open_default(Path::new(&path)) {
        Ok(_) => println!("KIND opened"),
        Err(e) => println!("KIND {} ({e})", kind(&e)),
    }
}

/// The file's format version (`PRAGMA user_version`), read by a plain connection.
pub(crate) fn user_version(path: &Path) -> i32 {
    let conn = rusqlite::Connection::open(path).unwrap();

    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

/// A one-word name of an open error, for children to print and parents to compare.
pub(crate) fn kind(e: &OpenError) -> &'static str {
    match e {
        OpenError::NotAQueue(_) => "NotAQueue",
        OpenError::Corrupt(_) => "Corrupt",
        OpenError::ReadOnly(_) => "ReadOnly",
        OpenError::Locked(_) => "Locked",
        OpenError::NewerVersion { .. } => "NewerVersion",
        OpenError::BadRow { .. } => "BadRow",
        OpenError::Config(_) => "Config",
        OpenError::Decode { .. } => "Decode",
        OpenError::Restore { .. } => "Restore",
        OpenError::Io(_) => "Io",
        OpenError::Sqlite(_) => "Sqlite",
        _ => "other",
    }
}

/// Fills the "disk" under the writer: its free pages are taken by a filler row and
/// `max_page_count` is cut to the file's size, so the next commit that needs a new page
/// fails with `SQLITE_FULL` (no root, no small filesystem needed).
#[cfg(feature = "fault-injection")]
pub(crate) fn fill_disk(q: &Queue) {
    q.store().on_writer(|c| {
        let _ = c.execute_batch(
            "CREATE TABLE IF NOT EXISTS filler (x BLOB);
             INSERT INTO filler SELECT zeroblob((SELECT freelist_count FROM pragma_freelist_count)
                 * (SELECT page_size FROM pragma_page_size));
             PRAGMA max_page_count = 1;",
        );
    });
}

/// Gives the "disk" its space back (see [`fill_disk`]).
#[cfg(feature = "fault-injection")]
pub(crate) fn free_disk(q: &Queue) {
    q.store().on_writer(|c| {
        let _ = c.execute_batch("PRAGMA max_page_count = 1073741823; DELETE FROM filler;");
    });
}

/// Every item the file at `path` holds, live or dead, as (id, attempts), read by a
/// plain SQLite connection (the queue must be closed).
pub(crate) fn rows(path: &Path) -> Vec<(u64, u32, bool, Vec<u8>)> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut st = conn
        .prepare("SELECT id, attempts, dead, payload FROM items ORDER BY id")
        .unwrap();
    let rows = st
        .query_map([], |r| {
            Ok((r.get::<_, i64>(0)? as u64, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    rows
}

/// SQL that takes a file back to what format 6 had (no flow control's columns and table):
/// the start of every older format a migration test makes from a new file.
pub(crate) const BEFORE_FLOW: &str = "ALTER TABLE items DROP COLUMN flow_kind; \
     ALTER TABLE items DROP COLUMN flow_partition; ALTER TABLE items DROP COLUMN flow_group; \
     ALTER TABLE items DROP COLUMN snoozes; ALTER TABLE items DROP COLUMN window_kind; \
     ALTER TABLE items DROP COLUMN window_ns; ALTER TABLE items DROP COLUMN pushed_at; \
     DROP TABLE flow; DROP TABLE gone_keys;";
