//! Where the Postgres store does not keep flow keys (`Push::kind`, `partition`, `group`):
//! beside a unique key (`Push::key`), in a push in the caller's transaction, in a bounded
//! queue (`Config::with_capacity`: its insert takes no flow keys). A push giving
//! them there is refused, typed, with the item handed back, and no row is written.

use leaseq_test_kit::pg as common;

use std::time::Duration;

use leaseq_async::{Config, Push, PushError, Store};
use leaseq_postgres::TxPushError;

#[test]
fn a_push_with_flow_keys_is_refused_beside_a_key_and_in_a_transaction() {
    common::with_server(|url| async move {
        let name = common::unique("flow-refused");
        let config = Config::new(Duration::from_secs(30));
        let q = common::open_bytes(&url, name.clone(), config, common::options()).await;
        match q.try_push_with(b"a".to_vec(), Push::new().partition("p").key("k")) {
            Err(PushError::Unsupported { item, what }) => {
                assert_eq!(item, b"a".to_vec());
                assert!(what.contains("flow keys"), "{what}");
            }
            other => panic!("expected Unsupported, got {other:?}"),
        }
        let mut items = vec![b"b".to_vec()].into_iter();
        let batch = q
            .store()
            .try_push_batch(&mut items, &Push::new().group("g").key("k2"));
        assert!(
            matches!(&batch, Err((ids, PushError::Unsupported { .. })) if ids.is_empty()),
            "{batch:?}"
        );
        let mut db = common::sql(&url).await;
        let tx = db.transaction().await.expect("begin");
        let r = q
            .store()
            .push_in(&tx, b"c".to_vec(), Push::new().kind("k"))
            .await;
        assert!(matches!(&r, Err(TxPushError::Unsupported { .. })), "{r:?}");
        tx.commit().await.expect("commit");
        let watcher = common::sql(&url).await;
        assert_eq!(common::row_count(&watcher, &name).await, 0);
    });
}

#[test]
fn a_push_with_flow_keys_is_refused_in_a_bounded_queue() {
    common::with_server(|url| async move {
        let name = common::unique("flow-bounded");
        let config = Config::new(Duration::from_secs(30)).with_capacity(100);
        let q = common::open_bytes(&url, name.clone(), config, common::options()).await;
        match q.try_push_with(b"a".to_vec(), Push::new().group("g")) {
            Err(PushError::Unsupported { item, what }) => {
                assert_eq!(item, b"a".to_vec());
                assert!(what.contains("bounded"), "{what}");
            }
            other => panic!("expected Unsupported, got {other:?}"),
        }
        let mut items = vec![b"b".to_vec()].into_iter();
        let batch = q.store().try_push_batch(&mut items, &Push::new().kind("k"));
        assert!(
            matches!(&batch, Err((ids, PushError::Unsupported { .. })) if ids.is_empty()),
            "{batch:?}"
        );
        // A plain push still goes in.
        q.try_push(b"c".to_vec()).expect("a plain push");
        q.push(b"d".to_vec()).await.expect("committed");
        let watcher = common::sql(&url).await;
        assert_eq!(common::row_count(&watcher, &name).await, 2);
    });
}
