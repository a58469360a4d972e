//! Settles whose reply is lost (the statement ran; the connection reset before its answer
//! came back), one at a time through the fault proxy (`faults/proxy.rs`): each says what
//! really happened, or a typed "outcome unknown", never a wrong definite answer. An ack
//! retried after its lost reply finds its row gone: outcome unknown, not `AlreadyAcked`; a
//! nack or dead letter finds its row moved as it moves it: done. And a push the server
//! cannot take within the commit timeout is `Unconfirmed`, kept, and committed later.

use leaseq_test_kit::pg as common;

#[path = "faults/proxy.rs"]
mod proxy;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use leaseq_async::{Config, MessageId, Nacked, PushError};
use leaseq_postgres::{BytesCodec, PgDelivery, PgQueue, Postgres};

use common::{PATIENCE, SCHEMA};

/// A queue whose connections go through a proxy that injects nothing until told.
async fn proxied(
    url: &str,
    options: leaseq_postgres::Options,
) -> (Arc<proxy::Proxy>, PgQueue<Vec<u8>>) {
    let direct: tokio_postgres::Config = url.parse().expect("url");
    let proxy = proxy::Proxy::without_faults(&direct).await;
    let q = leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(Config::new(Duration::from_secs(30)))
        .name(common::unique("lost-reply").to_string())
        .codec(BytesCodec)
        .open(Postgres::config(proxy.config(&direct)).options(options))
        .await
        .expect("open");
    (proxy, q)
}

/// [`proxied`], and one item delivered from it: the delivery and its id.
async fn delivered(
    url: &str,
) -> (
    Arc<proxy::Proxy>,
    PgQueue<Vec<u8>>,
    PgDelivery<Vec<u8>>,
    MessageId,
) {
    let (proxy, q) = proxied(url, common::options()).await;
    q.push(b"job".to_vec()).await.expect("push");
    let d = common::receive(&q).await;
    let id = d.id();
    (proxy, q, d, id)
}

/// Runs `op` with the reply to the next statement that contains `statement` lost (the
/// connection cut once the server has run it): its answer, within [`PATIENCE`]. Asserts
/// that the statement did reach the server (its reply was the one lost).
async fn reply_lost<F: Future>(proxy: &proxy::Proxy, statement: &str, op: F) -> F::Output {
    proxy.lose_next_reply(statement);
    let r = tokio::time::timeout(PATIENCE, op).await.expect("answered");
    assert!(
        !proxy.target_pending(),
        "the reply to {statement:?} was lost"
    );
    r
}

/// The statement of a nack (its reply lost in a test).
const NACK: &str = "reason = $4, last_error = COALESCE($5";
/// The statement of a dead letter.
const DEAD_LETTER: &str = "reason = $3, last_error = $4,";

/// `(state, attempts)` of the row, `None` once it is gone.
async fn row(url: &str, id: leaseq_async::MessageId) -> Option<(i16, i32)> {
    let db = common::sql(url).await;
    db.query_opt(
        &format!("SELECT state, attempts FROM {SCHEMA}.items WHERE id = $1"),
        &[&(id.get() as i64)],
    )
    .await
    .expect("read the row")
    .map(|r| (r.get(0), r.get(1)))
}

#[test]
fn an_ack_whose_reply_was_lost_is_outcome_unknown_not_already_acked() {
    common::with_server(|url| async move {
        let (proxy, _q, d, id) = delivered(&url).await;
        let r = reply_lost(&proxy, "USING unnest", d.ack()).await;
        assert!(r.as_ref().is_err_and(|e| e.is_outcome_unknown()), "{r:?}");
        assert_eq!(row(&url, id).await, None, "the lost try deleted the row");
    });
}

#[test]
fn a_nack_whose_reply_was_lost_reports_the_retry_it_made() {
    common::with_server(|url| async move {
        let (proxy, _q, d, id) = delivered(&url).await;
        let r = reply_lost(&proxy, NACK, d.nack("failed")).await;
        assert!(
            matches!(r, Ok(Nacked::Retrying { attempts: 1, .. })),
            "{r:?}"
        );
        assert_eq!(
            row(&url, id).await,
            Some((0, 1)),
            "waiting again, once tried"
        );
    });
}

#[test]
fn a_dead_letter_whose_reply_was_lost_reports_the_dead_letter_it_made() {
    common::with_server(|url| async move {
        let (proxy, _q, d, id) = delivered(&url).await;
        let r = reply_lost(&proxy, DEAD_LETTER, d.dead_letter("poison")).await;
        assert_eq!(r, Ok(1));
        assert_eq!(row(&url, id).await, Some((2, 1)), "a dead letter");
    });
}

#[test]
fn a_push_the_server_cannot_take_in_time_is_unconfirmed_then_committed() {
    common::with_server(|url| async move {
        let options = common::options().commit_timeout(Duration::from_millis(500));
        let (proxy, q) = proxied(&url, options).await;
        proxy
            .blocked
            .store(true, std::sync::atomic::Ordering::Release);
        let r = tokio::time::timeout(PATIENCE, q.push(b"during".to_vec()))
            .await
            .expect("the push gives up after the commit timeout");
        let Err(PushError::Unconfirmed { id, error }) = r else {
            panic!("{r:?}")
        };
        assert!(error.is_outcome_unknown(), "{error:?}");
        assert_eq!(row(&url, id).await, None, "not committed yet");
        // The server is back: the queue kept the row and commits it.
        proxy
            .blocked
            .store(false, std::sync::atomic::Ordering::Release);
        let d = common::receive(&q).await;
        assert_eq!((d.id(), d.item().as_slice()), (id, b"during".as_slice()));
        assert!(d.ack().await.is_ok());
    });
}

#[test]
fn a_cancel_whose_connection_reset_is_tried_again_not_reported_not_found() {
    common::with_server(|url| async move {
        let (proxy, q) = proxied(&url, common::options()).await;
        let id = leaseq_test_kit::steps::push_in_a_minute(&q, b"later").await;
        // The delete's reply is lost: its transaction never commits (the connection is
        // gone), and the cancel is tried again on another.
        let r = reply_lost(&proxy, "DELETE FROM", q.cancel(id)).await;
        assert_eq!(r.as_deref(), Ok(b"later".as_slice()));
        assert_eq!(row(&url, id).await, None, "cancelled");
    });
}

/// Issue 33: the ack of a job's last parent, its reply lost, re-run after the trigger
/// released the job in the same statement: the job is released once, and a batch's
/// callback counts each child once.
#[test]
fn a_parents_ack_whose_reply_was_lost_releases_its_dependent_once() {
    use leaseq_async::dependencies::{BatchOn, DependencyStore, OnFailedParent, Parent};
    common::with_server(|url| async move {
        let (proxy, q) = proxied(&url, common::options()).await;
        let g = q.store();
        let parent = q.push(b"parent".to_vec()).await.expect("push");
        let child = g
            .push_after(
                b"child".to_vec(),
                &[Parent::Message(parent)],
                OnFailedParent::Cancel,
            )
            .await
            .expect("push_after");
        let batch = g
            .push_batch(
                vec![b"kid".to_vec()],
                b"callback".to_vec(),
                BatchOn::Success,
            )
            .await
            .expect("push_batch");
        let mut released = Vec::new();
        for _ in 0..4 {
            let d = common::receive(&q).await;
            released.push(d.item().clone());
            if d.item() == b"parent" || d.item() == b"kid" {
                let r = reply_lost(&proxy, "USING unnest", d.ack()).await;
                assert!(r.as_ref().is_err_and(|e| e.is_outcome_unknown()), "{r:?}");
            } else {
                d.ack().await.expect("ack");
            }
        }
        common::nothing_comes(&q).await;
        released.sort();
        let names: [&[u8]; 4] = [b"callback", b"child", b"kid", b"parent"];
        assert_eq!(released, names.map(<[u8]>::to_vec), "each once");
        let counts = g.batch_counts(batch).await.expect("read").expect("a batch");
        assert_eq!((counts.total, counts.acked, counts.open), (1, 1, 0));
        assert!(matches!(
            g.job_state(child).await.expect("read"),
            Some(leaseq_async::dependencies::StepState::Acked(_))
        ));
    });
}

/// A graph call whose commit's reply is lost says so: outcome unknown, not "not done".
#[test]
fn a_push_after_whose_commit_reply_was_lost_is_outcome_unknown() {
    use leaseq_async::dependencies::{DependencyError, DependencyStore, OnFailedParent};
    common::with_server(|url| async move {
        let (proxy, q) = proxied(&url, common::options()).await;
        let g = q.store();
        proxy.lose_commit_after("graph_add(");
        let push = g.push_after(b"job".to_vec(), &[], OnFailedParent::Cancel);
        let r = tokio::time::timeout(PATIENCE, push)
            .await
            .expect("answered");
        assert!(!proxy.target_pending(), "the commit's reply was lost");
        let Err(refused) = r else { panic!("{r:?}") };
        assert!(
            matches!(&refused.error, DependencyError::Store(e) if e.is_outcome_unknown()),
            "{refused:?}"
        );
        assert_eq!(refused.payload, b"job", "handed back");
        // It did commit: the job comes once.
        let d = common::receive(&q).await;
        assert_eq!(d.item(), b"job");
        d.ack().await.expect("ack");
        common::nothing_comes(&q).await;
    });
}
