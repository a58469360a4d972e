//! A dead letter whose reason code this version does not know (written by a newer one)
//! opens and reads as `Reason::Dropped`, its error and attempts kept, on purpose: a file a
//! newer version wrote stays readable, its dead letters redrivable. A reason that is not a
//! code at all is a bad row (`OpenError::BadRow`), refused with the file untouched.

mod support;

use leaseq_async::{Page, Reason};
use leaseq_sqlite::{FileView, OpenError};
use leaseq_test_kit::steps;
use support::{open_default, remove, temp};

/// A file with one dead letter (error "poison", one attempt), its reason then set by `sql`.
fn dead_letter_file(name: &str, sql: &str) -> std::path::PathBuf {
    let path = temp(name);
    let q = open_default(&path).unwrap();
    smol::block_on(async {
        q.push(b"job".to_vec()).await.unwrap();
        steps::dead_letter_next(&q, "poison").await;
    });
    drop(q);
    let conn = rusqlite::Connection::open(&path).unwrap();
    assert_eq!(conn.execute(sql, []).unwrap(), 1);
    path
}

#[test]
fn an_unknown_reason_code_opens_as_dropped() {
    let path = dead_letter_file(
        "unknown-reason",
        "UPDATE items SET reason = 200 WHERE dead = 1",
    );
    let q = open_default(&path).expect("a newer version's reason opens");
    let dead = smol::block_on(q.dead_letters(Page::first(10))).unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].reason, Reason::Dropped);
    assert_eq!(dead[0].last_error.as_deref(), Some("poison"));
    assert_eq!(dead[0].attempts, 1);
    let id = dead[0].id;
    smol::block_on(q.redrive(id)).expect("redrivable");
    drop(q);
    remove(&path);
}

#[test]
fn the_file_view_shows_an_unknown_reason_as_none() {
    let path = dead_letter_file(
        "unknown-reason-view",
        "UPDATE items SET reason = 200 WHERE dead = 1",
    );
    let view = FileView::open(&path).unwrap();
    let dead = view.dead_letters(Page::first(10)).unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].reason, None);
    assert_eq!(dead[0].last_error.as_deref(), Some("poison"));
    drop(view);
    remove(&path);
}

#[test]
fn a_reason_that_is_not_a_code_is_a_bad_row() {
    let path = dead_letter_file(
        "text-reason",
        "UPDATE items SET reason = 'later' WHERE dead = 1",
    );
    let before = std::fs::read(&path).unwrap();
    let e = open_default(&path).map(drop).unwrap_err();
    assert!(matches!(e, OpenError::BadRow { .. }), "{e:?}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    remove(&path);
}
