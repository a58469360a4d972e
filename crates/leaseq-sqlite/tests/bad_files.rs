//! Bad queue files: each refused at `open` with the typed error that says what is true
//! (not a queue, corrupt or truncated, read-only, locked, a bad row, a newer version), and
//! the database file byte-identical afterwards.

mod support;

use std::path::Path;
use std::time::Duration;

use leaseq_sqlite::{OpenError, Options};
use support::{open_default, open_with, remove, run_child, temp};

/// A queue file holding `n` items of 1 KiB, closed cleanly.
fn sample(name: &str, n: usize) -> std::path::PathBuf {
    leaseq_test_kit::sqlite::sample(temp(name), n)
}

/// Opens `path`, expecting a refusal; checks the file is byte-identical; returns the error.
fn refused(path: &Path, options: Options) -> OpenError {
    let before = std::fs::read(path).unwrap();
    let e = match open_with(path, options) {
        Ok(_) => panic!("{} was opened", path.display()),
        Err(e) => e,
    };
    assert_eq!(
        std::fs::read(path).unwrap(),
        before,
        "the file changed ({e})"
    );
    e
}

#[test]
fn zero_length_file_is_not_a_queue() {
    let path = temp("zero");
    std::fs::write(&path, b"").unwrap();
    let e = refused(&path, Options::default());
    assert!(matches!(e, OpenError::NotAQueue(_)), "{e:?}");
    remove(&path);
}

#[test]
fn foreign_files_are_not_a_queue() {
    let path = temp("garbage");
    std::fs::write(&path, b"hello, this is not a database at all").unwrap();
    let e = refused(&path, Options::default());
    assert!(matches!(e, OpenError::NotAQueue(_)), "{e:?}");
    remove(&path);

    let path = temp("other-app");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
    }
    let e = refused(&path, Options::default());
    assert!(matches!(e, OpenError::NotAQueue(_)), "{e:?}");
    remove(&path);
}

#[test]
fn truncated_file_is_corrupt() {
    let path = sample("truncated", 300);
    let whole = std::fs::read(&path).unwrap();
    assert!(whole.len() > 200 * 1024, "{}", whole.len());
    for cut in [50, whole.len() / 2] {
        std::fs::write(&path, &whole[..cut]).unwrap();
        let e = refused(&path, Options::default());
        assert!(matches!(e, OpenError::Corrupt(_)), "cut at {cut}: {e:?}");
    }
    remove(&path);
}

#[test]
fn damaged_pages_are_corrupt() {
    let path = sample("damaged", 300);
    let mut bytes = std::fs::read(&path).unwrap();
    let page = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
    // Every page after the first: b-tree headers and cells overwritten.
    for p in 1..bytes.len() / page {
        for b in &mut bytes[p * page..p * page + 64] {
            *b = 0xA5;
        }
    }
    std::fs::write(&path, &bytes).unwrap();
    let e = refused(&path, Options::default());
    assert!(matches!(e, OpenError::Corrupt(_)), "{e:?}");
    remove(&path);
}

/// The child's part of `read_only_file_is_refused`: opens the file it is given (as a user
/// who cannot write it) and prints the error's kind.
#[test]
fn read_only_child() {
    support::open_and_print_kind("LEASEQ_READ_ONLY_CHILD");
}

#[test]
fn read_only_file_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let path = sample("read-only", 10);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let before = std::fs::read(&path).unwrap();
    // root writes whatever the mode: then the open runs as `nobody`.
    let root = std::fs::OpenOptions::new().write(true).open(&path).is_ok();
    let (status, out) = run_child(
        "read_only_child",
        &[("LEASEQ_READ_ONLY_CHILD", path.display().to_string())],
        root.then_some(65534),
    );
    assert!(status.success(), "{out}");
    assert!(out.contains("KIND ReadOnly"), "{out}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    remove(&path);
}

#[test]
fn file_locked_by_another_connection_is_locked() {
    let path = sample("foreign-lock", 10);
    let before = std::fs::read(&path).unwrap();
    let other = rusqlite::Connection::open(&path).unwrap();
    other
        .execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;")
        .unwrap();
    let options = Options::new().busy_timeout(Duration::from_millis(50));
    let e = open_with(&path, options).map(drop).unwrap_err();
    assert!(matches!(e, OpenError::Locked(_)), "{e:?}");
    other.execute_batch("ROLLBACK;").unwrap();
    drop(other);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    remove(&path);
}

#[test]
fn second_open_in_this_process_is_locked_until_the_owner_drops() {
    let path = sample("second-open", 10);
    let q = open_default(&path).unwrap();
    let before = std::fs::read(&path).unwrap();
    let e = open_default(&path).map(drop).unwrap_err();
    assert!(matches!(e, OpenError::Locked(_)), "{e:?}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    drop(q);
    let q = open_default(&path).unwrap();
    assert_eq!(q.stats().ready, 10);
    drop(q);
    remove(&path);
}

/// Sets `sql` on a closed sample file, then expects a `BadRow` refusal naming `row`.
fn bad_row(name: &str, sql: &str, row: &str) {
    let path = sample(name, 5);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(sql).unwrap();
    }
    let e = refused(&path, Options::default());
    match &e {
        OpenError::BadRow { row: r, .. } => assert!(r.contains(row), "{e:?}"),
        e => panic!("{sql}: {e:?}"),
    }
    remove(&path);
}

#[test]
fn bad_rows_are_refused() {
    bad_row(
        "next-id-text",
        "UPDATE meta SET value = 'abc' WHERE key = 'next_id'",
        "next_id",
    );
    bad_row(
        "next-id-negative",
        "UPDATE meta SET value = -3 WHERE key = 'next_id'",
        "next_id",
    );
    bad_row(
        "next-id-real",
        "UPDATE meta SET value = 2.5 WHERE key = 'next_id'",
        "next_id",
    );
    bad_row(
        "next-id-missing",
        "DELETE FROM meta WHERE key = 'next_id'",
        "next_id",
    );
    bad_row(
        "attempts-negative",
        "UPDATE items SET attempts = -1 WHERE id = (SELECT min(id) FROM items)",
        "item",
    );
    bad_row(
        "priority-text",
        "UPDATE items SET priority = 'high' WHERE id = (SELECT min(id) FROM items)",
        "item",
    );
}

#[test]
fn newer_version_is_refused() {
    let path = sample("newer", 3);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA user_version = 99;").unwrap();
    }
    let e = refused(&path, Options::default());
    assert!(
        matches!(
            e,
            OpenError::NewerVersion {
                found: 99,
                supported: leaseq_sqlite::FORMAT_VERSION,
                ..
            }
        ),
        "{e:?}"
    );
    remove(&path);
}
