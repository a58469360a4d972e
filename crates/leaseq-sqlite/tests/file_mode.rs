//! A new queue's files (the database, `-wal`, `-shm`, `-lock`) are readable and writable by
//! their owner only, unless [`Options::file_mode`] says otherwise; an existing file keeps
//! its mode.
#![cfg(unix)]

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use leaseq_sqlite::Options;
use support::{open_default, open_with, remove, temp};

fn sidecars(path: &Path) -> Vec<PathBuf> {
    ["", "-wal", "-shm", "-lock"]
        .iter()
        .map(|s| PathBuf::from(format!("{}{s}", path.display())))
        .collect()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn a_new_queue_and_its_wal_are_owner_only() {
    let path = temp("mode-default");
    let q = open_default(&path).unwrap();
    smol::block_on(q.push(vec![1; 64])).unwrap(); // the WAL exists once written
    for f in sidecars(&path) {
        assert_eq!(mode(&f), 0o600, "{}", f.display());
    }
    drop(q);
    remove(&path);
}

#[test]
fn the_caller_may_ask_for_another_mode_and_existing_files_keep_theirs() {
    let path = temp("mode-640");
    let options = || Options::new().file_mode(0o640);
    let q = open_with(&path, options()).unwrap();
    smol::block_on(q.push(vec![1; 64])).unwrap();
    for f in sidecars(&path) {
        // Less the umask, which may take the group's read away (never adds it).
        assert_eq!(mode(&f) & !0o640, 0, "{}", f.display());
        assert_eq!(mode(&f) & 0o600, 0o600, "{}", f.display());
    }
    drop(q);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let q = open_default(&path).unwrap();
    assert_eq!(mode(&path), 0o644, "an existing file keeps its mode");
    drop(q);
    remove(&path);
}
