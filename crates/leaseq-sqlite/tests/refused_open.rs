//! A refused open leaves the directory as it found it: no `-wal`, `-shm`, `-lock` (nor a
//! database file) that was not there before, and the database file byte-identical. One
//! test per refusal, each in a directory of its own, listed before and after: another
//! application's database (WAL and rollback journal), text, zero bytes, a newer version,
//! damaged and truncated files, a bad row, an undecodable item, the file held by another
//! connection, by another process and by a queue of this process, a file this user may
//! not write, a missing directory and a configuration refused for a new file.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use leaseq_async::{Codec, CodecError, Config};
use leaseq_smol::SmolRuntime;
use leaseq_sqlite::{OpenError, Options, Sqlite};
use support::dir::{assert_same, refused_in, Dir};
use support::open_default;

/// A queue file of `n` items in `dir`, closed cleanly (only the file and its lock stay).
fn sample(dir: &Dir, n: usize) -> PathBuf {
    leaseq_test_kit::sqlite::sample(dir.file("q.db"), n)
}

/// `sample` without its lock file, as a file copied from elsewhere is.
fn sample_alone(dir: &Dir, n: usize) -> PathBuf {
    let path = sample(dir, n);
    std::fs::remove_file(dir.file("q.db-lock")).unwrap();
    assert_eq!(dir.names(), ["q.db"]);
    path
}

#[test]
fn another_applications_wal_database_is_left_as_it_was() {
    let dir = Dir::new("foreign-wal");
    let path = dir.file("app.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1);",
        )
        .unwrap();
    }
    assert_eq!(dir.names(), ["app.db"], "closed cleanly: its WAL is gone");
    let e = refused_in(&dir, &path, Options::default());
    assert!(matches!(e, OpenError::NotAQueue(_)), "{e:?}");
}

#[test]
fn another_applications_rollback_database_is_left_as_it_was() {
    let dir = Dir::new("foreign-rollback");
    let path = dir.file("app.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
    }
    let e = refused_in(&dir, &path, Options::default());
    assert!(matches!(e, OpenError::NotAQueue(_)), "{e:?}");
}

#[test]
fn text_and_empty_files_are_left_as_they_were() {
    let dir = Dir::new("text");
    let path = dir.file("notes.txt");
    std::fs::write(&path, b"hello, this is not a database at all").unwrap();
    let e = refused_in(&dir, &path, Options::default());
    assert!(matches!(e, OpenError::NotAQueue(_)), "{e:?}");
    std::fs::write(&path, b"").unwrap();
    let e = refused_in(&dir, &path, Options::default());
    assert!(matches!(e, OpenError::NotAQueue(_)), "{e:?}");
}

#[test]
fn a_newer_version_is_left_as_it_was() {
    let dir = Dir::new("newer");
    let path = sample_alone(&dir, 3);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA user_version = 99;").unwrap();
    }
    assert_eq!(dir.names(), ["q.db"]);
    let e = refused_in(&dir, &path, Options::default());
    assert!(matches!(e, OpenError::NewerVersion { .. }), "{e:?}");
}

#[test]
fn a_damaged_file_is_left_as_it_was() {
    let dir = Dir::new("damaged");
    let path = sample_alone(&dir, 300);
    let mut bytes = std::fs::read(&path).unwrap();
    let page = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
    for p in 1..bytes.len() / page {
        for b in &mut bytes[p * page..p * page + 64] {
            *b = 0xA5;
        }
    }
    std::fs::write(&path, &bytes).unwrap();
    let e = refused_in(&dir, &path, Options::default());
    assert!(matches!(e, OpenError::Corrupt(_)), "{e:?}");
}

#[test]
fn a_truncated_file_is_left_as_it_was() {
    let dir = Dir::new("truncated");
    let path = sample_alone(&dir, 300);
    let whole = std::fs::read(&path).unwrap();
    for cut in [50, whole.len() / 2] {
        std::fs::write(&path, &whole[..cut]).unwrap();
        let e = refused_in(&dir, &path, Options::default());
        assert!(matches!(e, OpenError::Corrupt(_)), "cut at {cut}: {e:?}");
    }
}

#[test]
fn a_bad_row_is_left_as_it_was() {
    let dir = Dir::new("bad-row");
    let path = sample_alone(&dir, 5);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("UPDATE meta SET value = 'abc' WHERE key = 'next_id'")
            .unwrap();
    }
    let e = refused_in(&dir, &path, Options::default());
    assert!(matches!(e, OpenError::BadRow { .. }), "{e:?}");
}

/// Bytes that begin with 0xFF do not decode.
struct Picky;

impl Codec<Vec<u8>> for Picky {
    fn encode(&self, item: &Vec<u8>) -> Result<Vec<u8>, CodecError> {
        Ok(item.clone())
    }
    fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
        match bytes.first() {
            Some(0xFF) => Err(CodecError("0xFF is not an item".into())),
            _ => Ok(bytes.to_vec()),
        }
    }
}

#[test]
fn an_undecodable_item_is_left_as_it_was() {
    let dir = Dir::new("decode");
    let path = dir.file("q.db");
    let q = open_default(&path).unwrap();
    smol::block_on(q.push(vec![0xFF, 1])).unwrap();
    drop(q);
    std::fs::remove_file(dir.file("q.db-lock")).unwrap();
    let before = dir.listing();
    let r = smol::block_on(
        leaseq_async::LeaseQueue::builder(support::config())
            .runtime(SmolRuntime::global())
            .codec(Picky)
            .open(Sqlite::file(&path)),
    );
    let e = r.map(drop).unwrap_err();
    assert!(matches!(e, OpenError::Decode { .. }), "{e:?}");
    assert_same(&before, &dir.listing(), &e);
}

#[test]
fn a_file_held_by_another_connection_is_left_as_it_was() {
    let dir = Dir::new("held");
    let path = sample_alone(&dir, 10);
    let other = rusqlite::Connection::open(&path).unwrap();
    other
        .execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;")
        .unwrap();
    let options = Options::new().busy_timeout(Duration::from_millis(50));
    let e = refused_in(&dir, &path, options);
    assert!(matches!(e, OpenError::Locked(_)), "{e:?}");
    other.execute_batch("ROLLBACK;").unwrap();
}

#[test]
fn a_file_owned_by_a_queue_of_this_process_is_left_as_it_was() {
    let dir = Dir::new("owned-here");
    let path = sample(&dir, 10);
    let q = open_default(&path).unwrap();
    let before = dir.names();
    let e = open_default(&path).map(drop).unwrap_err();
    assert!(matches!(e, OpenError::Locked(_)), "{e:?}");
    assert_eq!(dir.names(), before);
    drop(q);
}

/// The child's part of `a_file_owned_by_another_process_is_left_as_it_was`: owns the file
/// it is given until the parent's "done" file appears.
#[test]
fn owner_child() {
    let Ok(path) = std::env::var("LEASEQ_OWNER_CHILD") else {
        return;
    };
    let ready = std::env::var("LEASEQ_OWNER_READY").unwrap();
    let q = open_default(Path::new(&path)).unwrap();
    std::fs::write(&ready, b"").unwrap();
    let done = format!("{ready}.done");
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !Path::new(&done).exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(q);
}

#[test]
fn a_file_owned_by_another_process_is_left_as_it_was() {
    let dir = Dir::new("owned-there");
    let path = sample(&dir, 10);
    let signals = Dir::new("owned-there-signals");
    let ready = signals.file("ready");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "owner_child", "--test-threads=1"])
        .env("LEASEQ_OWNER_CHILD", &path)
        .env("LEASEQ_OWNER_READY", &ready)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    while !ready.exists() {
        assert!(child.try_wait().unwrap().is_none(), "the owner ended early");
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = dir.names();
    let e = open_default(&path).map(drop).unwrap_err();
    assert!(matches!(e, OpenError::Locked(_)), "{e:?}");
    assert_eq!(dir.names(), before);
    std::fs::write(format!("{}.done", ready.display()), b"").unwrap();
    assert!(child.wait().unwrap().success());
}

/// The child's part of `a_file_this_user_may_not_write_is_left_as_it_was`: opens the file
/// it is given and prints the error's kind.
#[test]
fn not_writable_child() {
    support::open_and_print_kind("LEASEQ_NOT_WRITABLE_CHILD");
}

#[test]
fn a_file_this_user_may_not_write_is_left_as_it_was() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Dir::new("not-writable");
    let path = sample_alone(&dir, 10);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    // Anyone may make files in the directory: only the database file is not writable.
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o777)).unwrap();
    let root = std::fs::OpenOptions::new().write(true).open(&path).is_ok();
    let before = dir.listing();
    let (status, out) = support::run_child(
        "not_writable_child",
        &[("LEASEQ_NOT_WRITABLE_CHILD", path.display().to_string())],
        root.then_some(65534),
    );
    assert!(status.success(), "{out}");
    assert!(out.contains("KIND ReadOnly"), "{out}");
    assert_same(&before, &dir.listing(), &out);
}

#[test]
fn a_missing_directory_is_not_made() {
    let dir = Dir::new("missing-dir");
    let path = dir.file("no-such-dir").join("q.db");
    let e = refused_in(&dir, &path, Options::default());
    assert!(!dir.file("no-such-dir").exists());
    drop(e);
}

#[test]
fn a_refused_configuration_makes_no_file() {
    let dir = Dir::new("bad-config");
    let path = dir.file("q.db");
    let r = smol::block_on(
        leaseq_async::LeaseQueue::<Vec<u8>, SmolRuntime>::builder(Config::new(Duration::ZERO))
            .runtime(SmolRuntime::global())
            .codec(leaseq_sqlite::BytesCodec)
            .open(Sqlite::file(&path)),
    );
    let e = r.map(drop).unwrap_err();
    assert!(matches!(e, OpenError::Config(_)), "{e:?}");
    assert!(dir.names().is_empty(), "{:?}", dir.names());
}
