//! Every refused open names the file and chains its cause (issue 30, "Errors lose their
//! cause"): a file in a directory that does not exist, a directory this user may not write,
//! a file it may not write, a file another queue holds, a damaged file, another
//! application's file, a missing file read by `FileView`; and an oversized push names
//! `Options::max_item_size`. Each asserts the variant, the `Display` (a sentence an
//! operator acts on) and the `source()` under it.

mod support;

use std::error::Error;
use std::path::{Path, PathBuf};

use leaseq_sqlite::{FileView, OpenError, Options};
use support::{open_default, open_with, remove, run_child, temp};

/// A fresh directory of this test's own.
fn scratch(name: &str) -> PathBuf {
    let dir = temp(name).with_extension("d");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The io::Error right under `e`.
fn io_cause(e: &OpenError) -> &std::io::Error {
    e.source()
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .unwrap_or_else(|| panic!("no io::Error under {e:?}"))
}

#[test]
fn a_file_in_a_missing_directory_names_the_file_and_the_directory() {
    let dir = scratch("no-dir").join("missing");
    let path = dir.join("q.db");
    let e = open_default(&path).map(drop).unwrap_err();
    assert!(matches!(e, OpenError::NoDirectory(_)), "{e:?}");
    assert_eq!(e.path(), Some(path.as_path()));
    assert_eq!(
        e.to_string(),
        format!(
            "the queue file {} cannot be made (its directory {} does not exist): create the \
             directory first",
            path.display(),
            dir.display()
        )
    );
    assert_eq!(io_cause(&e).kind(), std::io::ErrorKind::NotFound);
    assert!(!dir.exists());
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

/// The child's part of the tests run as a user who may not write: opens the file it is
/// given and prints what it was told.
#[test]
fn denied_child() {
    let Ok(path) = std::env::var("LEASEQ_DENIED_CHILD") else {
        return;
    };
    match open_default(Path::new(&path)) {
        Ok(_) => println!("SAID opened"),
        Err(e) => {
            let io = e.source().and_then(|s| s.downcast_ref::<std::io::Error>());
            println!("SAID {e}");
            println!("PATH {:?}", e.path());
            println!("CAUSE {:?}", io.map(|io| io.kind()));
        }
    }
}

/// Runs `denied_child` on `path` as `nobody` (root writes whatever the modes say).
fn as_nobody(path: &Path) -> String {
    let (status, out) = run_child(
        "denied_child",
        &[("LEASEQ_DENIED_CHILD", path.display().to_string())],
        Some(65534),
    );
    assert!(status.success(), "{out}");
    out
}

#[test]
fn a_directory_this_user_may_not_write_is_read_only_with_the_system_s_error() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("denied-dir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = dir.join("q.db");
    let out = as_nobody(&path);
    assert!(
        out.contains(&format!(
            "SAID the queue file {} cannot be written (cannot make its lock file {}-lock): a \
             queue needs to write its file and, beside it, its -wal, -shm and -lock files",
            path.display(),
            path.display()
        )),
        "{out}"
    );
    assert!(out.contains(&format!("PATH Some({:?})", path)), "{out}");
    assert!(out.contains("CAUSE Some(PermissionDenied)"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_file_this_user_may_not_write_is_read_only_with_the_system_s_error() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("denied-file");
    let path = dir.join("q.db");
    drop(open_default(&path).unwrap());
    // A file copied here without its lock file: `nobody` makes one, then meets the file.
    std::fs::remove_file(dir.join("q.db-lock")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = as_nobody(&path);
    assert!(
        out.contains(&format!(
            "SAID the queue file {} cannot be written (SQLite could open it only to read)",
            path.display()
        )),
        "{out}"
    );
    assert!(out.contains("CAUSE Some(PermissionDenied)"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_file_another_queue_holds_names_its_lock() {
    let path = temp("held-causes");
    let q = open_default(&path).unwrap();
    let e = open_default(&path).map(drop).unwrap_err();
    assert!(matches!(e, OpenError::Locked(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "the queue file {} is in use (another open queue holds {}-lock, in this process \
             or another): retry once its owner closed it",
            path.display(),
            path.display()
        )
    );
    assert_eq!(io_cause(&e).kind(), std::io::ErrorKind::WouldBlock);
    drop(q);
    remove(&path);
}

#[test]
fn a_damaged_file_has_sqlite_s_error_under_it() {
    let path = temp("damaged-causes");
    let q = open_default(&path).unwrap();
    smol::block_on(async {
        for i in 0..300 {
            q.push(vec![i as u8; 1024]).await.unwrap();
        }
    });
    drop(q);
    let mut bytes = std::fs::read(&path).unwrap();
    let page = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
    for p in 1..bytes.len() / page {
        bytes[p * page..p * page + 64].fill(0xA5);
    }
    std::fs::write(&path, &bytes).unwrap();
    let e = open_default(&path).map(drop).unwrap_err();
    assert!(matches!(e, OpenError::Corrupt(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "the queue file {} is damaged or truncated: restore it from a backup",
            path.display()
        )
    );
    let sqlite = e
        .source()
        .and_then(|s| s.downcast_ref::<rusqlite::Error>())
        .expect("SQLite's error under it");
    assert!(sqlite.to_string().contains("malformed"), "{sqlite}");
    remove(&path);
}

#[test]
fn another_application_s_file_is_named() {
    let path = temp("foreign-causes");
    std::fs::write(&path, b"hello, this is not a database").unwrap();
    let e = open_default(&path).map(drop).unwrap_err();
    assert!(matches!(e, OpenError::NotAQueue(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "{} is not a leaseq queue file (it is not a SQLite database)",
            path.display()
        )
    );
    remove(&path);
}

#[test]
fn a_missing_file_read_by_a_file_view_is_not_found() {
    let dir = scratch("view-missing");
    let path = dir.join("q.db");
    let e = FileView::open(&path).unwrap_err();
    assert!(matches!(e, OpenError::NotFound(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!("there is no queue file {}", path.display())
    );
    assert_eq!(io_cause(&e).kind(), std::io::ErrorKind::NotFound);
    assert!(!path.exists(), "nothing made");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_oversized_push_names_the_option() {
    let path = temp("too-large-causes");
    let q = open_with(&path, Options::new().max_item_size(100)).unwrap();
    let e = smol::block_on(q.push(vec![0u8; 101])).unwrap_err();
    leaseq_test_kit::steps::assert_too_large_101_of_100(&e);
    drop(q);
    remove(&path);
}
