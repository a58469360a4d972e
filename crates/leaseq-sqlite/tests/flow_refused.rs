//! Flow keys (`Push::kind`, `partition`, `group`) are not yet kept by the SQLite store's
//! journal: a push giving them is refused, typed, with the item handed back, on the single
//! and the batch path, and nothing is queued.

mod support;

use leaseq_async::{Push, PushError, Store};
use support::{open_default, remove, temp};

#[test]
fn a_push_with_flow_keys_is_refused_typed_and_nothing_is_queued() {
    let path = temp("flow-refused");
    let q = open_default(&path).unwrap();
    match q.try_push_with(b"job".to_vec(), Push::new().group("g")) {
        Err(PushError::Unsupported { item, what }) => {
            assert_eq!(item, b"job".to_vec());
            assert!(what.contains("flow keys"), "{what}");
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
    let mut items = vec![b"b".to_vec()].into_iter();
    let batch = q.store().try_push_batch(&mut items, &Push::new().kind("k"));
    assert!(
        matches!(&batch, Err((ids, PushError::Unsupported { .. })) if ids.is_empty()),
        "{batch:?}"
    );
    assert_eq!(q.stats().pushed, 0);
    drop(q);
    remove(&path);
}
