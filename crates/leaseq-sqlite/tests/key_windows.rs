//! Unique keys' windows (`Push::key_window`) are not offered by the SQLite store (its
//! journal keeps a key while its item is live, no longer): a push asking for one is
//! refused, typed, with the item handed back, and nothing is queued.

mod support;

use std::time::Duration;

use leaseq_async::core::KeyWindow;
use leaseq_async::{Push, PushError};
use support::{open_default, remove, temp};

#[test]
fn a_push_with_a_key_window_is_refused_typed_and_nothing_is_queued() {
    let path = temp("key-window-refused");
    let q = open_default(&path).unwrap();
    let throttle = Push::new()
        .key("k")
        .key_window(KeyWindow::Period(Duration::from_secs(60)));
    match q.try_push_with(b"job".to_vec(), throttle) {
        Err(PushError::Unsupported { item, what }) => {
            assert_eq!(item, b"job".to_vec());
            assert!(what.contains("key_window"), "{what}");
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
    assert_eq!(q.stats().pushed, 0);
    // The default window (while live) is the store's own.
    q.try_push_with(
        b"job".to_vec(),
        Push::new().key("k").key_window(KeyWindow::Live),
    )
    .unwrap();
    drop(q);
    remove(&path);
}
