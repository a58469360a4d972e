//! The writers' committed-id watermarks (`writer_marks`, what makes a retried insert skip
//! the rows its lost try committed): a push raises its writer's mark to the id it got; the
//! upkeep forgets the marks of writers that committed nothing for 30 days and keeps the
//! others.

use leaseq_test_kit::pg as common;

use std::time::Duration;

use leaseq_async::Config;

use common::SCHEMA;

/// A queue of bytes named after `prefix`, its upkeep's vacuum off.
async fn open(url: &str, prefix: &str) -> leaseq_postgres::PgQueue<Vec<u8>> {
    let config = Config::new(Duration::from_secs(30));
    let options = common::options().vacuum_after_rows(0);
    common::open_bytes(url, common::unique(prefix), config, options).await
}

/// The mark of writer `instance`, if it has one.
async fn mark(db: &tokio_postgres::Client, instance: i64) -> Option<i64> {
    let q = format!("SELECT top FROM {SCHEMA}.writer_marks WHERE instance = $1");
    db.query_opt(&q, &[&instance])
        .await
        .expect("read the mark")
        .map(|r| r.get::<_, i64>(0))
}

#[test]
fn pushes_raise_their_writers_mark_and_the_upkeep_forgets_only_old_ones() {
    common::with_server(|url| async move {
        let q = open(&url, "marks").await;
        let first = q.push(b"a".to_vec()).await.expect("push");
        let last = q.push(b"b".to_vec()).await.expect("push");
        let db = common::sql(&url).await;
        let instance = (last.get() >> 32) as i64;
        assert!(first < last);
        assert_eq!(mark(&db, instance).await, Some(last.get() as i64), "raised");

        // A writer gone for 31 days, and one seen a day ago.
        db.execute(
            &format!(
                "INSERT INTO {SCHEMA}.writer_marks (instance, top, below, at) VALUES
                 (2000000001, 1, 0, now() - interval '31 days'),
                 (2000000002, 1, 0, now() - interval '1 day')"
            ),
            &[],
        )
        .await
        .expect("old marks");
        q.store().run_upkeep().await.expect("upkeep");
        assert_eq!(mark(&db, 2000000001).await, None, "forgotten");
        assert_eq!(mark(&db, 2000000002).await, Some(1), "kept");
        assert_eq!(mark(&db, instance).await, Some(last.get() as i64), "kept");
    });
}

#[test]
fn a_batch_meeting_a_row_with_its_id_is_inserted_without_it_not_retried_for_ever() {
    common::with_server(|url| async move {
        let q = open(&url, "marks-conflict").await;
        let first = q.push(b"a".to_vec()).await.expect("push");
        // A row already holding the id the writer gives next, behind the watermark's back
        // (the fast insert has no ON CONFLICT: it is refused, and the batch goes again
        // with one).
        let db = common::sql(&url).await;
        let taken = first.get() as i64 + 1;
        db.execute(
            &format!(
                "INSERT INTO {SCHEMA}.items (id, queue, visible_at, payload)
                 VALUES ($1, 'elsewhere', 'infinity', '\\x00')"
            ),
            &[&taken],
        )
        .await
        .expect("insert the squatter");
        let batch = vec![b"b".to_vec(), b"c".to_vec()];
        let ids = tokio::time::timeout(Duration::from_secs(10), q.push_batch(batch))
            .await
            .expect("the batch committed (not retried for ever)")
            .expect("push");
        assert_eq!(ids[0].get() as i64, taken);
        // The squatter is kept; the other row of the batch went in.
        let d = common::receive(&q).await;
        assert_eq!(d.item(), b"a");
        d.ack().await.expect("ack");
        let d = common::receive(&q).await;
        assert_eq!(d.item(), b"c");
        d.ack().await.expect("ack");
        let queue: String = db
            .query_one(
                &format!("SELECT queue FROM {SCHEMA}.items WHERE id = $1"),
                &[&taken],
            )
            .await
            .expect("the squatter")
            .get(0);
        assert_eq!(queue, "elsewhere");
    });
}
