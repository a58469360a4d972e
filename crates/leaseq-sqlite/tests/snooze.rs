//! Snooze is not offered by the SQLite store yet (its rows keep no snooze count, and the
//! bound needs one): a delivery's snooze is refused, typed, and the lease is kept.

mod support;

use leaseq_async::{SettleError, Store};
use support::{open_default, remove, temp};

#[test]
fn a_snooze_is_refused_typed_and_the_lease_is_kept() {
    let path = temp("snooze-refused");
    let q = open_default(&path).unwrap();
    smol::block_on(async {
        assert!(!q.store().snoozes());
        q.push(b"job".to_vec()).await.unwrap();
        let mut d = q.receive().await.unwrap();
        let refused = d.snooze(std::time::Duration::from_secs(5)).await;
        assert_eq!(refused, Err(SettleError::Unsupported("snooze")));
        d.ack().await.unwrap();
        assert_eq!(q.stats().acked, 1);
    });
    drop(q);
    remove(&path);
}
