//! A plain ack pays nothing for the graph (`ack_plain.rs`): the claim says whether a row has
//! a node, the settler sends the acks of rows without one to the bare ack and the rest to
//! the told one. The graph is told whatever the claim saw: a job (its node set at insert)
//! releases its dependent, and a plain message adopted as a parent after its claim (the bare
//! ack then deletes nothing) is acked by the told ack all the same.

use leaseq_test_kit::pg as common;

use std::time::Duration;

use leaseq_async::dependencies::{DependencyStore, NodeId, OnFailedParent, Parent, StepState};
use leaseq_async::{Config, MessageId};
use leaseq_postgres::{Options, PgDelivery, PgQueue};

async fn next(q: &PgQueue<Vec<u8>>) -> PgDelivery<Vec<u8>> {
    match q.receive_timeout(Duration::from_secs(10)).await {
        Ok(d) => d,
        Err(e) => panic!(
            "no delivery ({e:?}); last error {:?}",
            q.store().last_error()
        ),
    }
}

async fn after(q: &PgQueue<Vec<u8>>, item: &[u8], parent: Parent) -> NodeId {
    q.store()
        .push_after(item.to_vec(), &[parent], OnFailedParent::Cancel)
        .await
        .expect("push_after")
}

async fn state(q: &PgQueue<Vec<u8>>, node: NodeId) -> Option<StepState> {
    q.store().job_state(node).await.expect("job_state")
}

/// The number of rows of the queue still in the table.
async fn rows(url: &str, q: &PgQueue<Vec<u8>>) -> i64 {
    common::sql(url)
        .await
        .query_one(
            &format!(
                "SELECT count(*) FROM \"{}\".items WHERE queue = $1",
                common::SCHEMA
            ),
            &[&q.store().queue_name()],
        )
        .await
        .unwrap()
        .get(0)
}

/// A job's row has its node from its insert: the claim sees it, its ack (through the
/// settler, with plain acks in the same batch) tells the graph and releases its dependent.
#[test]
fn an_acked_job_releases_its_dependent() {
    common::with_server(|url| async move {
        let q = common::open_one_try(&url, "ack_plain_job").await;
        let plain: MessageId = q.push(b"plain".to_vec()).await.unwrap();
        let first = after(&q, b"first", Parent::Message(plain)).await;
        let second = after(&q, b"second", Parent::Job(first)).await;
        let d = next(&q).await;
        assert_eq!(d.item(), b"plain");
        // Acked with a plain row beside it in the same batch: `first` queued by it.
        let other = q.push(b"other".to_vec()).await.unwrap();
        let o = next(&q).await;
        assert_eq!(o.id(), other);
        let (a, b) = futures_util::future::join(d.ack(), o.ack()).await;
        a.unwrap();
        b.unwrap();
        assert!(matches!(state(&q, first).await, Some(StepState::Queued(_))));
        let d = next(&q).await;
        assert_eq!(d.item(), b"first");
        d.ack().await.unwrap();
        assert!(matches!(state(&q, first).await, Some(StepState::Acked(_))));
        let s = state(&q, second).await;
        assert!(matches!(s, Some(StepState::Queued(_))), "released: {s:?}");
        let d = next(&q).await;
        assert_eq!(d.item(), b"second");
        d.ack().await.unwrap();
        assert!(matches!(state(&q, second).await, Some(StepState::Acked(_))));
        assert_eq!(rows(&url, &q).await, 0);
        q.close().await.unwrap();
    });
}

/// A plain message claimed without a node, then adopted as a job's parent while leased: the
/// bare ack refuses it (`node IS NULL`), the told ack deletes it and releases the child.
#[test]
fn a_row_adopted_after_its_claim_is_acked_and_told() {
    common::with_server(|url| async move {
        let q = common::open_one_try(&url, "ack_plain_adopted").await;
        let p = q.push(b"p".to_vec()).await.unwrap();
        let d = next(&q).await;
        assert_eq!(d.id(), p);
        let kid = after(&q, b"kid", Parent::Message(p)).await;
        assert_eq!(state(&q, kid).await, Some(StepState::Pending));
        let acked = d.ack().await;
        assert!(acked.is_ok(), "{acked:?}");
        let s = state(&q, kid).await;
        assert!(matches!(s, Some(StepState::Queued(_))), "released: {s:?}");
        let d = next(&q).await;
        assert_eq!(d.item(), b"kid");
        d.ack().await.unwrap();
        assert_eq!(rows(&url, &q).await, 0);
        q.close().await.unwrap();
    });
}

/// A plain ack refused (its lease taken over) is still explained as before: the bare ack
/// and then the told one refuse it, and the row stays for its new holder.
#[test]
fn a_stale_plain_ack_is_refused() {
    common::with_server(|url| async move {
        let q = common::open_bytes(
            &url,
            common::unique("ack_plain_stale"),
            Config::new(Duration::from_millis(200)).with_max_attempts(5),
            Options::new().schema(common::SCHEMA),
        )
        .await;
        q.push(b"x".to_vec()).await.unwrap();
        let first = next(&q).await;
        let second = next(&q).await;
        assert_eq!(second.item(), b"x", "redelivered once the lease ran out");
        assert!(first.ack().await.is_err(), "the old lease refused");
        assert_eq!(rows(&url, &q).await, 1);
        second.ack().await.unwrap();
        assert_eq!(rows(&url, &q).await, 0);
        q.close().await.unwrap();
    });
}
