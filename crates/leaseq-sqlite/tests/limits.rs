//! The maximum item size ([`Options::max_item_size`]): a larger push is refused, typed,
//! with its item, and nothing reaches the file; a file holding a larger item (written under
//! a higher limit) is refused at open, typed, naming the row, and left as it was.

mod support;

use leaseq_async::PushError;
use leaseq_sqlite::{OpenError, Options, DEFAULT_MAX_ITEM_SIZE};
use support::{open_with, remove, rows, temp};

fn max(bytes: usize) -> Options {
    Options::new().max_item_size(bytes)
}

#[test]
fn an_item_over_the_limit_is_refused_with_the_item_and_nothing_stored() {
    let path = temp("default-limit");
    let q = open_with(&path, Options::new()).unwrap();
    let over = vec![0u8; DEFAULT_MAX_ITEM_SIZE + 1];
    assert!(matches!(q.try_push(over), Err(PushError::TooLarge { .. })));
    drop(q);
    remove(&path);
    let path = temp("too-large");
    let q = open_with(&path, max(100)).unwrap();
    let big = vec![5u8; 101];
    match q.try_push(big.clone()) {
        Err(PushError::TooLarge { item, size, max }) => {
            assert_eq!((item, size, max), (big.clone(), 101, 100));
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    smol::block_on(async {
        match q.push(big.clone()).await {
            Err(e @ PushError::TooLarge { .. }) => assert_eq!(e.into_item(), Some(big)),
            other => panic!("expected TooLarge, got {other:?}"),
        }
        q.push(vec![1u8; 100]).await.expect("at the limit");
    });
    assert_eq!(q.stats().ready, 1);
    drop(q);
    let stored = rows(&path);
    assert_eq!(stored.len(), 1, "only the item at the limit");
    assert_eq!(stored[0].3, vec![1u8; 100]);
    remove(&path);
}

#[test]
fn a_file_holding_a_larger_item_is_refused_at_open_untouched() {
    let path = temp("oversized-row");
    let q = open_with(&path, max(10_000)).unwrap();
    smol::block_on(async {
        q.push(vec![1]).await.unwrap();
        q.push(vec![9u8; 5_000]).await.unwrap();
    });
    drop(q);
    let before = rows(&path);
    let e = match open_with(&path, max(1_000)) {
        Ok(_) => panic!("opened"),
        Err(e) => e,
    };
    match &e {
        OpenError::BadRow { row, why, .. } => {
            assert!(row.starts_with("item "), "{row}");
            assert!(why.contains("5000 bytes"), "{why}");
        }
        other => panic!("expected BadRow, got {other:?}"),
    }
    assert_eq!(rows(&path), before, "the file was changed");
    // Under the old limit it opens, both items there.
    let q = open_with(&path, max(10_000)).unwrap();
    assert_eq!(q.stats().ready, 2);
    drop(q);
    remove(&path);
}
