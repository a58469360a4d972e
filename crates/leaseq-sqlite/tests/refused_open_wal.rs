//! A refused open of a WAL-mode file found with its `-wal` (a process that died holding it,
//! or a copy made while it was open) leaves the directory as it found it, as
//! `refused_open.rs` checks for files closed cleanly: no `-shm` or `-lock` that was not
//! there, the `-wal` neither checkpointed into the file nor removed, every byte the same.
//! And the check reads through the `-wal`: a change found only there (a newer version, a
//! bad row) decides. A [`FileView`](leaseq_sqlite::FileView) of such a file leaves it as it
//! was too.

mod support;

use std::path::Path;

use leaseq_sqlite::{OpenError, Options};
use support::dir::{refused_in, Dir};

/// The files of the database `from` (`suffixes`: `""` for the database itself, `"-wal"`,
/// `"-shm"`) copied into `to` as `name`, as they are now: with a connection still open on
/// `from`, the state a process leaves when it dies holding the file (`-shm` included), or a
/// copy made without some of them.
fn copy_as_found(from: &Path, to: &Dir, name: &str, suffixes: &[&str]) {
    for suffix in suffixes {
        let mut src = from.as_os_str().to_owned();
        src.push(suffix);
        std::fs::copy(&src, to.file(&format!("{name}{suffix}"))).unwrap();
    }
}

/// Another application's WAL-mode database, its last change still in its `-wal` (the
/// connection left open): returned with the connection.
fn foreign_open(src: &Dir) -> (std::path::PathBuf, rusqlite::Connection) {
    let live = src.file("app.db");
    let conn = rusqlite::Connection::open(&live).unwrap();
    conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1);")
        .unwrap();
    (live, conn)
}

/// A leaseq queue file of `n` items, closed cleanly, then changed by `sql` on a connection
/// left open (so the change is only in its `-wal`): returned with the connection.
fn queue_changed(src: &Dir, n: usize, sql: &str) -> (std::path::PathBuf, rusqlite::Connection) {
    let live = leaseq_test_kit::sqlite::sample(src.file("q.db"), n);
    let conn = rusqlite::Connection::open(&live).unwrap();
    conn.execute_batch(&format!("PRAGMA wal_autocheckpoint = 0; {sql}"))
        .unwrap();
    (live, conn)
}

#[test]
fn another_applications_database_with_a_wal_and_no_shm_is_left_as_it_was() {
    let (src, dir) = (Dir::new("foreign-wal-src"), Dir::new("foreign-wal-only"));
    let (live, _conn) = foreign_open(&src);
    copy_as_found(&live, &dir, "app.db", &["", "-wal"]);
    assert_eq!(dir.names(), ["app.db", "app.db-wal"]);
    let e = refused_in(&dir, &dir.file("app.db"), Options::default());
    assert!(matches!(e, OpenError::NotAQueue(_)), "{e:?}");
}

#[test]
fn another_applications_database_as_its_process_died_is_left_as_it_was() {
    let (src, dir) = (Dir::new("foreign-died-src"), Dir::new("foreign-died"));
    let (live, _conn) = foreign_open(&src);
    copy_as_found(&live, &dir, "app.db", &["", "-wal", "-shm"]);
    let e = refused_in(&dir, &dir.file("app.db"), Options::default());
    assert!(matches!(e, OpenError::NotAQueue(_)), "{e:?}");
}

#[test]
fn a_newer_version_found_only_in_the_wal_is_refused_and_left_as_it_was() {
    let (src, dir) = (Dir::new("newer-wal-src"), Dir::new("newer-wal"));
    let (live, _conn) = queue_changed(&src, 3, "PRAGMA user_version = 99;");
    for suffixes in [&["", "-wal"][..], &["-shm"]] {
        copy_as_found(&live, &dir, "q.db", suffixes);
        let e = refused_in(&dir, &dir.file("q.db"), Options::default());
        assert!(
            matches!(e, OpenError::NewerVersion { found: 99, .. }),
            "with {:?}: {e:?}",
            dir.names()
        );
    }
}

#[test]
fn a_bad_row_found_only_in_the_wal_is_refused_and_left_as_it_was() {
    let (src, dir) = (Dir::new("bad-row-wal-src"), Dir::new("bad-row-wal"));
    let sql = "UPDATE meta SET value = 'abc' WHERE key = 'next_id';";
    let (live, _conn) = queue_changed(&src, 5, sql);
    for suffixes in [&["", "-wal"][..], &["-shm"]] {
        copy_as_found(&live, &dir, "q.db", suffixes);
        let e = refused_in(&dir, &dir.file("q.db"), Options::default());
        assert!(
            matches!(e, OpenError::BadRow { .. }),
            "with {:?}: {e:?}",
            dir.names()
        );
    }
}

#[test]
fn a_file_view_of_a_queue_with_a_wal_and_no_shm_leaves_it_as_it_was() {
    let (src, dir) = (Dir::new("view-wal-src"), Dir::new("view-wal"));
    let (live, _conn) = queue_changed(&src, 4, "DELETE FROM items WHERE id = 0;");
    copy_as_found(&live, &dir, "q.db", &["", "-wal"]);
    let before = dir.listing();
    let view = leaseq_sqlite::FileView::open(dir.file("q.db")).unwrap();
    assert_eq!(view.counts().unwrap().ready, 3, "read through the -wal");
    drop(view);
    support::dir::assert_same(&before, &dir.listing(), &"a file view");
}
