//! `FileView::open` meeting `SQLITE_CANTOPEN` (what an open sees at the moment an owner
//! closing the file removes its `-wal` and `-shm`), injected before each try touches the
//! file: a few are waited out and the view opens; one that lasts is given up with its
//! typed error after the retry's 5 s.

#![cfg(feature = "fault-injection")]

mod support;

use std::error::Error;

use leaseq_sqlite::{FileView, OpenError};
use support::{remove, temp};

#[test]
fn a_view_open_that_meets_cantopen_a_few_times_tries_again_and_opens() {
    let path = leaseq_test_kit::sqlite::sample(temp("view-cantopen"), 3);
    FileView::fail_opens(3);
    let view = FileView::open(&path).expect("opened once the injected failures are used");
    assert_eq!(FileView::fail_opens(0), 0, "every injected failure was met");
    assert_eq!(view.counts().unwrap().ready, 3, "the file's items are read");
    drop(view);
    remove(&path);
}

#[test]
fn a_view_open_that_keeps_meeting_cantopen_gives_up_with_its_error() {
    let path = leaseq_test_kit::sqlite::sample(temp("view-cantopen-lasting"), 1);
    FileView::fail_opens(u32::MAX);
    let e = FileView::open(&path).expect_err("never opens");
    let left = FileView::fail_opens(0);
    assert!(
        left < u32::MAX - 1,
        "tried again before giving up ({left} left)"
    );
    let OpenError::Sqlite(file) = &e else {
        panic!("not the SQLite error: {e:?}");
    };
    let code = file
        .source()
        .and_then(|c| c.downcast_ref::<rusqlite::Error>())
        .and_then(|c| c.sqlite_error_code());
    assert_eq!(code, Some(rusqlite::ErrorCode::CannotOpen), "{e:?}");
    // The file is untouched and opens once the fault is gone.
    assert_eq!(FileView::open(&path).unwrap().counts().unwrap().ready, 1);
    remove(&path);
}
