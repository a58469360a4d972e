//! Store failures at the seam, as the shared layer reports them: a wrapper store that lets
//! a `MemoryStore` do the work and fails chosen calls (a commit that cannot be confirmed, a
//! settle not done, a settle whose outcome is unknown). Each test pins how the failure
//! reaches the caller typed, and fails on the layer that turned a failed commit into `Ok`
//! or counted a store failure as a stale settle (virtual time).

mod support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use leaseq_async::{Pool, PushError, StoreError};
use leaseq_test_kit::sim;

use support::faulty::queue;

/// An awaited push whose commit the store cannot confirm answers `Unconfirmed` with the id
/// the queue kept (it was `Ok` whatever `synced` said); a fire-and-forget push is not
/// affected; `close().await` reports the same failure, and `Ok` once commits go through.
#[test]
fn an_unconfirmed_commit_is_not_ok() {
    sim::run(|rt| async move {
        let (q, store) = queue(&rt);
        store.faults.sync.store(1, Ordering::Release);
        let err = q.push(1).await.expect_err("the commit was not confirmed");
        let PushError::Unconfirmed { id, ref error } = err else {
            panic!("expected Unconfirmed, got {err:?}");
        };
        assert!(error.is_outcome_unknown(), "{error}");
        assert!(err.into_item().is_none(), "the queue kept the item");
        // The item stays queued under that id: the outcome is unknown, not "not done".
        let d = q
            .receive()
            .await
            .expect("the unconfirmed item is still queued");
        assert_eq!((d.id(), *d.item()), (id, 1));
        d.ack().await.expect("ack");

        q.try_push(2)
            .expect("fire and forget does not wait for the commit");
        store.faults.sync.store(1, Ordering::Release);
        let closing = q.close().await;
        assert!(
            closing.as_ref().is_err_and(StoreError::is_outcome_unknown),
            "{closing:?}"
        );
        assert_eq!(q.close().await, Ok(()));
    });
}

/// A settle the store did not make is `SettleError::Store` (not done), one whose reply was
/// lost is `SettleError::Store` (outcome unknown): neither is a stale receipt, and neither
/// is `Ok`.
#[test]
fn settle_failures_are_typed_not_stale() {
    sim::run(|rt| async move {
        let (q, store) = queue(&rt);
        for i in 0..3 {
            q.push(i).await.expect("push");
        }
        store.faults.settle_not_done.store(1, Ordering::Release);
        let d = q.receive().await.expect("an item");
        let err = d.ack().await.expect_err("not sent");
        assert!(err.stale().is_none() && !err.is_outcome_unknown(), "{err}");
        assert!(err
            .store()
            .is_some_and(|e| e.message().contains("no connection")));

        store.faults.settle_reply_lost.store(1, Ordering::Release);
        let d = q.receive().await.expect("an item");
        let err = d.nack("again").await.expect_err("reply lost");
        assert!(err.is_outcome_unknown(), "{err}");
        assert!(err != leaseq_async::ReceiptError::Unknown);

        // The ack that was not sent left its lease to run out, and the nack whose reply was
        // lost went through: both items come back for a second attempt, the third is
        // untouched. Nothing was acked.
        sim::sleep(&rt, Duration::from_secs(11)).await;
        let mut attempts = Vec::new();
        while let Some(d) = q.try_receive() {
            attempts.push((*d.item(), d.attempt()));
            d.ack().await.expect("ack");
        }
        attempts.sort_unstable();
        assert_eq!(attempts, [(0, 2), (1, 2), (2, 1)]);
    });
}

/// A pool counts settles the store failed as `failed_settles`, not as stale settles, and
/// `ack_batch` puts them in `failed()`, not in `stale()`.
#[test]
fn pool_and_ack_batch_count_store_failures_apart() {
    sim::run(|rt| async move {
        let (q, store) = queue(&rt);
        for i in 0..4 {
            q.push(i).await.expect("push");
        }
        store.faults.settle_reply_lost.store(2, Ordering::Release);
        let batch = q.ack_batch(vec![
            q.receive().await.expect("an item"),
            q.receive().await.expect("an item"),
            q.receive().await.expect("an item"),
        ]);
        let batch = batch.await;
        assert_eq!(batch.accepted(), 1);
        assert_eq!(batch.failed().len(), 2);
        assert!(batch.stale().is_empty());
        assert!(!batch.all_accepted());

        store.faults.settle_not_done.store(1, Ordering::Release);
        // No heartbeat: this store has no max lease, and a heartbeat would keep the lease
        // of the unsent ack alive for good; the test is about the lease running out.
        let pool = Pool::builder(q.clone())
            .workers(1)
            .heartbeat(false)
            .spawn(|_job| async { Ok(()) });
        // The one item left is handled once; its ack is not sent, so its lease runs out
        // and it is handled again (acked then).
        q.wait_empty().await;
        let stats = pool.stats();
        assert_eq!(stats.failed_settles, 1, "{stats:?}");
        assert_eq!(stats.stale_settles, 0, "{stats:?}");
        pool.shutdown(Duration::ZERO).await;
    });
}
