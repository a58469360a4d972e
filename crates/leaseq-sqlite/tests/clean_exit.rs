//! A clean exit loses nothing: a process that pushes with `try_push` (fire and forget),
//! drops its queue and returns from `main` finds every item in the file when it reopens,
//! and the WAL checkpointed and truncated; `close().await` does the same without a drop.
//! The last handle's drop flushes even while a delivery keeps the store alive; an open in
//! the same process waits for such a closing owner. The owner lock goes with the owner,
//! also when it is killed with SIGKILL.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use support::{open_default, remove, run_child, temp};

const ITEMS: usize = 10_000;

fn wal_len(path: &Path) -> u64 {
    std::fs::metadata(format!("{}-wal", path.display())).map_or(0, |m| m.len())
}

/// The child's part of `drop_then_exit_keeps_every_try_push`: pushes fire-and-forget,
/// drops the queue and ends its process.
#[test]
fn try_push_child() {
    let Ok(path) = std::env::var("LEASEQ_TRY_PUSH_CHILD") else {
        return;
    };
    let q = open_default(Path::new(&path)).unwrap();
    for i in 0..ITEMS {
        q.try_push((i as u32).to_le_bytes().to_vec()).unwrap();
    }
    drop(q);
}

#[test]
fn drop_then_exit_keeps_every_try_push() {
    let path = temp("clean-exit");
    let (status, out) = run_child(
        "try_push_child",
        &[("LEASEQ_TRY_PUSH_CHILD", path.display().to_string())],
        None,
    );
    assert!(status.success(), "{out}");
    assert_eq!(wal_len(&path), 0, "the WAL is truncated at close");
    let q = open_default(&path).unwrap();
    assert_eq!(q.stats().ready, ITEMS as u64);
    // In push order, none missing.
    smol::block_on(async {
        for i in 0..ITEMS {
            let d = q.try_receive().expect("every item is there");
            assert_eq!(d.item(), &(i as u32).to_le_bytes().to_vec());
            std::mem::forget(d);
        }
    });
    drop(q);
    remove(&path);
}

#[test]
fn close_await_commits_and_truncates_the_wal() {
    let path = temp("close-flush");
    let q = open_default(&path).unwrap();
    for i in 0..ITEMS {
        q.try_push((i as u32).to_le_bytes().to_vec()).unwrap();
    }
    smol::block_on(async { q.close().await }).unwrap();
    assert!(q.is_closed());
    assert_eq!(wal_len(&path), 0, "the WAL is truncated");
    // What the file holds now, read by another connection while the queue is still open.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM items", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, ITEMS as i64);
    drop(conn);
    drop(q);
    remove(&path);
}

/// The child's part of `last_handle_drop_flushes_while_the_store_lives_on`: a delivery
/// outlives the queue (forgotten, so the store is never dropped), the queue's last handle
/// is dropped, the process ends.
#[test]
fn outliving_delivery_child() {
    let Ok(path) = std::env::var("LEASEQ_OUTLIVING_CHILD") else {
        return;
    };
    let q = open_default(Path::new(&path)).unwrap();
    smol::block_on(async {
        q.push(b"held".to_vec()).await.unwrap();
        let d = q.receive().await.unwrap();
        for i in 0..ITEMS {
            q.try_push((i as u32).to_le_bytes().to_vec()).unwrap();
        }
        std::mem::forget(d);
    });
    drop(q);
}

#[test]
fn last_handle_drop_flushes_while_the_store_lives_on() {
    let path = temp("outliving");
    let (status, out) = run_child(
        "outliving_delivery_child",
        &[("LEASEQ_OUTLIVING_CHILD", path.display().to_string())],
        None,
    );
    assert!(status.success(), "{out}");
    let q = open_default(&path).unwrap();
    // Every push, and the held item back (its lease was not durable).
    assert_eq!(q.stats().ready, ITEMS as u64 + 1);
    let d = q.try_receive().unwrap();
    assert_eq!((d.item().as_slice(), d.attempt()), (&b"held"[..], 2));
    drop(d);
    drop(q);
    remove(&path);
}

#[test]
fn reopen_waits_for_a_closing_owner_of_this_process() {
    let path = temp("closing-owner");
    let q = open_default(&path).unwrap();
    let d = smol::block_on(async {
        q.push(b"x".to_vec()).await.unwrap();
        q.receive().await.unwrap()
    });
    // The delivery keeps the store (and its lock) alive after the last handle goes; it is
    // handed back a moment later, on another thread.
    drop(q);
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        drop(d);
    });
    let q = open_default(&path).expect("the closing owner let go");
    releaser.join().unwrap();
    // Handed back: visible again after its backoff (1 s by default, less up to half).
    assert_eq!((q.stats().in_flight, q.stats().delayed), (0, 1));
    let d = smol::block_on(q.receive_timeout(std::time::Duration::from_secs(5)))
        .expect("the handed-back item");
    assert_eq!(d.attempt(), 2);
    drop(d);
    drop(q);
    remove(&path);
}

/// The child's part of `lock_is_released_when_the_owner_is_killed`: opens the file, says
/// so, and waits to be killed.
#[test]
fn owner_child() {
    let Ok(path) = std::env::var("LEASEQ_OWNER_CHILD") else {
        return;
    };
    let _q = open_default(Path::new(&path)).unwrap();
    println!("OPEN");
    std::thread::sleep(std::time::Duration::from_secs(60));
}

/// Starts `owner_child` on `path` and waits until it holds the file.
pub(crate) fn start_owner(path: &PathBuf) -> std::process::Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "owner_child", "--test-threads=1", "--nocapture"])
        .env("LEASEQ_OWNER_CHILD", path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let opened = BufReader::new(out)
        .lines()
        .any(|l| l.is_ok_and(|l| l.contains("OPEN")));
    assert!(opened, "the child did not open the file");
    child
}

#[test]
fn lock_is_released_when_the_owner_is_killed() {
    let path = temp("kill-owner");
    drop(open_default(&path).unwrap());
    let mut child = start_owner(&path);
    let before = std::fs::read(&path).unwrap();
    let e = open_default(&path).map(drop).unwrap_err();
    assert!(matches!(e, leaseq_sqlite::OpenError::Locked(_)), "{e:?}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    child.kill().unwrap();
    child.wait().unwrap();
    drop(open_default(&path).expect("the OS released the dead owner's lock"));
    remove(&path);
}
