//! A failed commit is never published as committed: the push waiting on it fails (outcome
//! unknown) after the commit timeout and its item stays queued; new pushes are refused
//! (handed back) and receives wait while commits fail; once a retry succeeds everything
//! flows again, and the file has no gap (what was accepted before and during the failure
//! lands, in order). An ack waiting on a failing commit fails, outcome unknown, and lands
//! once the file recovers.

#![cfg(feature = "fault-injection")]

mod support;

use std::time::Duration;

use leaseq_async::{AdminError, PushError, SettleError};
use leaseq_sqlite::{CommitErrorKind, Options};
use support::{fill_disk, free_disk, open_with, remove, rows, temp, Queue};

fn options() -> Options {
    Options::new()
        .commit_timeout(Duration::from_millis(300))
        .busy_timeout(Duration::from_millis(20))
}

/// While commits fail: the awaited push `b` is unconfirmed (its id given), `try_push` is
/// refused with the item handed back, `try_receive` takes nothing.
async fn while_failing(q: &Queue, kind: CommitErrorKind) -> u64 {
    let b = match q.push(b"B".to_vec()).await {
        Err(PushError::Unconfirmed { id, error }) => {
            assert!(error.is_outcome_unknown(), "{error:?}");
            id.get()
        }
        other => panic!("B: {other:?}"),
    };
    assert!(q.store().journal_failed());
    let last = q.store().last_commit_error().expect("the failure is kept");
    assert_eq!(last.kind, kind, "{last}");
    match q.try_push(b"C".to_vec()) {
        Err(PushError::Store { item, error }) => {
            assert_eq!(item, b"C");
            assert!(!error.is_outcome_unknown(), "{error:?}");
        }
        other => panic!("C: {other:?}"),
    }
    assert!(
        q.try_receive().is_none(),
        "nothing is leased while commits fail"
    );
    b
}

/// After the failure ended: the sync completes, pushes flow, and the file holds A, B, D.
async fn after(q: &Queue) -> u64 {
    q.store().sync().await.expect("the retry succeeded");
    assert!(!q.store().journal_failed());
    q.push(b"D".to_vec()).await.unwrap().get()
}

#[test]
fn commit_failing_on_a_locked_file_is_retried_not_published() {
    let path = temp("locked-commit");
    let q = open_with(&path, options()).unwrap();
    let (a, b, d) = smol::block_on(async {
        let a = q.push(b"A".to_vec()).await.unwrap().get();
        let other = rusqlite::Connection::open(&path).unwrap();
        other.execute_batch("BEGIN IMMEDIATE;").unwrap();
        let b = while_failing(&q, CommitErrorKind::Locked).await;
        other.execute_batch("ROLLBACK;").unwrap();
        (a, b, after(&q).await)
    });
    drop(q);
    let ids: Vec<(u64, Vec<u8>)> = rows(&path).into_iter().map(|r| (r.0, r.3)).collect();
    assert_eq!(
        ids,
        vec![(a, b"A".to_vec()), (b, b"B".to_vec()), (d, b"D".to_vec())]
    );
    remove(&path);
}

#[test]
fn commit_failing_on_a_full_disk_is_retried_not_published() {
    let path = temp("full-commit");
    let q = open_with(&path, options()).unwrap();
    let (b, d) = smol::block_on(async {
        let a = q.push(b"A".to_vec()).await.unwrap();
        let delivery = q.receive().await.unwrap();
        assert_eq!(delivery.id(), a);
        fill_disk(&q);
        // A page's worth of items fills what the last page had left.
        for _ in 0..8 {
            q.try_push(vec![0; 1000]).unwrap();
        }
        let b = while_failing(&q, CommitErrorKind::DiskFull).await;
        // The ack cannot be confirmed: outcome unknown, never Ok.
        match delivery.ack().await {
            Err(SettleError::Store(e)) => assert!(e.is_outcome_unknown(), "{e:?}"),
            other => panic!("ack of A: {other:?}"),
        }
        free_disk(&q);
        (b, after(&q).await)
    });
    drop(q);
    // A's ack landed once the disk had room; the fillers, B and D are there.
    let got = rows(&path);
    assert_eq!(
        got.len(),
        10,
        "the 8 fillers, B, D: {:?}",
        got.iter().map(|r| r.0).collect::<Vec<_>>()
    );
    assert_eq!((got[8].0, got[9].0), (b, d));
    remove(&path);
}

/// The operator calls answer once their change is committed: while commits fail (the file
/// locked by another connection), a redrive and a cancel fail with an "outcome unknown"
/// store error (they answered `Ok` before: a redrive never written was reported done), and
/// their changes stay queued and land once the file recovers.
#[test]
fn operator_calls_on_a_locked_file_are_outcome_unknown_then_land() {
    let path = temp("locked-admin");
    let q = open_with(&path, options()).unwrap();
    let b = smol::block_on(async {
        let a = q.push(b"A".to_vec()).await.unwrap();
        let b = q.push(b"B".to_vec()).await.unwrap();
        // B to the dead letters; A put back, ready.
        let first = q.receive().await.unwrap();
        let second = q.receive().await.unwrap();
        assert_eq!((first.id(), second.id()), (a, b));
        first.put_back();
        second.dead_letter("poison").await.unwrap();

        let other = rusqlite::Connection::open(&path).unwrap();
        other.execute_batch("BEGIN IMMEDIATE;").unwrap();
        match q.redrive(b).await {
            Err(AdminError::Store(e)) => assert!(e.is_outcome_unknown(), "{e:?}"),
            other => panic!("redrive while commits fail: {other:?}"),
        }
        match q.cancel(a).await {
            Err(AdminError::Store(e)) => assert!(e.is_outcome_unknown(), "{e:?}"),
            other => panic!("cancel while commits fail: {other:?}"),
        }
        other.execute_batch("ROLLBACK;").unwrap();
        q.store().sync().await.expect("the retry succeeded");
        b
    });
    drop(q);
    // A cancelled, B live again (not dead, attempts reset).
    assert_eq!(rows(&path), vec![(b.get(), 0, false, b"B".to_vec())]);
    remove(&path);
}
