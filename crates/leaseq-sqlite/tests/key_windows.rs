//! Unique keys' windows (`Push::key_window`) on the SQLite store, kept in the file: a
//! throttle's key held after its item is acked, and still after a reopen; a key held for a
//! period after its item leaves, across a reopen; a `Queued` key taken by a second push
//! while the first runs, both items back after a reopen with the key the second's; a
//! window over after a reopen frees its key. (Real time: the writer is a thread; the one
//! wait is for at least the period.)

mod support;

use std::time::Duration;

use leaseq_async::core::{KeyWindow, MessageId};
use leaseq_async::{Push, PushError};
use leaseq_test_kit::sqlite::shut;
use support::{open_default, remove, temp, Queue};

fn keyed(window: KeyWindow) -> Push {
    Push::new().key("k").key_window(window)
}

/// The push is refused, its key held by `holder`.
fn refused(q: &Queue, push: Push, holder: MessageId) {
    match q.try_push_with(b"again".to_vec(), push) {
        Err(PushError::DuplicateKey { existing, .. }) => assert_eq!(existing, holder),
        other => panic!("expected DuplicateKey, got {other:?}"),
    }
}

#[test]
fn a_throttle_holds_its_key_after_the_ack_and_across_a_reopen() {
    let path = temp("window-throttle");
    let q = open_default(&path).unwrap();
    let minute = keyed(KeyWindow::Period(Duration::from_secs(60)));
    let first = smol::block_on(async {
        let id = q.push_with(b"a".to_vec(), minute.clone()).await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        id
    });
    refused(&q, minute.clone(), first);
    shut(q);
    let q = open_default(&path).unwrap();
    refused(&q, minute.clone(), first);
    // A plain keyed push is refused too: the key is held whatever the push asks.
    refused(&q, Push::new().key("k"), first);
    shut(q);
    remove(&path);
}

#[test]
fn live_then_a_period_holds_the_key_of_a_dead_letter_across_a_reopen() {
    let path = temp("window-live-then");
    let q = open_default(&path).unwrap();
    let then = keyed(KeyWindow::LiveThen(Duration::from_secs(60)));
    let first = smol::block_on(async {
        let id = q.push_with(b"a".to_vec(), then.clone()).await.unwrap();
        q.receive().await.unwrap().dead_letter("bad").await.unwrap();
        id
    });
    shut(q);
    let q = open_default(&path).unwrap();
    refused(&q, then, first);
    shut(q);
    remove(&path);
}

#[test]
fn a_queued_key_taken_while_its_item_runs_is_the_second_items_after_a_reopen() {
    let path = temp("window-queued");
    let q = open_default(&path).unwrap();
    let queued = keyed(KeyWindow::Queued);
    let second = smol::block_on(async {
        q.push_with(b"a".to_vec(), queued.clone()).await.unwrap();
        let running = q.receive().await.unwrap();
        let second = q.push_with(b"b".to_vec(), queued.clone()).await.unwrap();
        drop(running);
        second
    });
    shut(q);
    let q = open_default(&path).unwrap();
    assert_eq!(q.stats().ready + q.stats().delayed, 2, "both back");
    refused(&q, queued, second);
    shut(q);
    remove(&path);
}

#[test]
fn a_window_over_after_a_reopen_frees_its_key() {
    let path = temp("window-over");
    let q = open_default(&path).unwrap();
    let period = Duration::from_millis(300);
    let short = keyed(KeyWindow::Period(period));
    let first = smol::block_on(async {
        let id = q.push_with(b"a".to_vec(), short.clone()).await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        id
    });
    shut(q);
    let q = open_default(&path).unwrap();
    refused(&q, short.clone(), first);
    std::thread::sleep(period);
    q.try_push_with(b"b".to_vec(), short)
        .expect("the window is over");
    shut(q);
    remove(&path);
}
