//! Unique keys' windows (`Push::key_window`) are not offered by the Postgres store (the
//! table's unique index holds a key while its row is live, no longer): a push asking for
//! one is refused, typed, with the item handed back, on every push path (`try_push`, a
//! batch, a push in the caller's transaction), and no row is written.

use leaseq_test_kit::pg as common;

use std::time::Duration;

use leaseq_async::core::KeyWindow;
use leaseq_async::{Config, Push, PushError, Store};
use leaseq_postgres::TxPushError;

fn throttle() -> Push {
    Push::new()
        .key("k")
        .key_window(KeyWindow::Period(Duration::from_secs(60)))
}

#[test]
fn a_push_with_a_key_window_is_refused_on_every_path() {
    common::with_server(|url| async move {
        let name = common::unique("key-window");
        let config = Config::new(Duration::from_secs(30));
        let q = common::open_bytes(&url, name.clone(), config, common::options()).await;
        match q.try_push_with(b"a".to_vec(), throttle()) {
            Err(PushError::Unsupported { item, what }) => {
                assert_eq!(item, b"a".to_vec());
                assert!(what.contains("key_window"), "{what}");
            }
            other => panic!("expected Unsupported, got {other:?}"),
        }
        let mut items = vec![b"b".to_vec()].into_iter();
        let batch = q.store().try_push_batch(&mut items, &throttle());
        assert!(
            matches!(&batch, Err((ids, PushError::Unsupported { .. })) if ids.is_empty()),
            "{batch:?}"
        );
        let mut db = common::sql(&url).await;
        let tx = db.transaction().await.expect("begin");
        let r = q.store().push_in(&tx, b"c".to_vec(), throttle()).await;
        assert!(matches!(&r, Err(TxPushError::Unsupported { .. })), "{r:?}");
        tx.commit().await.expect("commit");
        let watcher = common::sql(&url).await;
        assert_eq!(common::row_count(&watcher, &name).await, 0);
    });
}
