//! `take_dead_letters` answers once its deletes are committed: while commits fail (the file
//! locked by another connection) it fails with an "outcome unknown" store error (it
//! answered with the letters before, whether or not their deletes reached the file), and
//! the deletes stay queued and land once the file recovers. (A redrive and a cancel:
//! `commit_failures.rs`, `operator_calls_on_a_locked_file_are_outcome_unknown_then_land`.)

mod support;

use std::time::Duration;

use leaseq_sqlite::Options;
use leaseq_test_kit::steps;
use support::{open_with, remove, rows, temp};

#[test]
fn take_dead_letters_on_a_locked_file_is_outcome_unknown_then_lands() {
    let path = temp("locked-take-dead");
    let options = Options::new()
        .commit_timeout(Duration::from_millis(300))
        .busy_timeout(Duration::from_millis(20));
    let q = open_with(&path, options).unwrap();
    let live = smol::block_on(async {
        q.push(b"dead".to_vec()).await.unwrap();
        let live = q.push(b"live".to_vec()).await.unwrap();
        steps::dead_letter_next(&q, "poison").await;

        let other = rusqlite::Connection::open(&path).unwrap();
        other.execute_batch("BEGIN IMMEDIATE;").unwrap();
        match q.store().take_dead_letters().await {
            Err(e) => assert!(e.is_outcome_unknown(), "{e:?}"),
            Ok(taken) => panic!("answered while commits fail: {} letters", taken.len()),
        }
        other.execute_batch("ROLLBACK;").unwrap();
        q.store().sync().await.expect("the retry succeeded");
        live
    });
    drop(q);
    // The dead letter's delete landed; the live item is there.
    assert_eq!(rows(&path), vec![(live.get(), 0, false, b"live".to_vec())]);
    remove(&path);
}
