//! The record of finished jobs as schema step 8: a version-7 schema (a current one set
//! back: its `history` table and the items' `pushed_at` / `started_at` dropped, its version
//! written back) reads as having no record, and the open migrates it to 8, after which an
//! ack is recorded with its times. Without `Options::retention` nothing is written.

use leaseq_test_kit::pg as common;

use std::time::Duration;

use leaseq_async::Config;
use leaseq_postgres::{
    migrate, schema_version, FinishOutcome, HistoryQuery, PgInspector, SCHEMA_VERSION,
};

use common::receive;
use leaseq_test_kit::envelope::envelope;

#[test]
fn a_version_7_schema_is_migrated_to_8_and_records() {
    common::with_server(|url| async move {
        let s = format!("{}{}_history_v7", common::RUN_PREFIX, std::process::id());
        let mut db = common::sql(&url).await;
        common::drop_schema(&url, &s).await;
        migrate(&mut db, &s).await.expect("migrate");
        // Set back to 7: no history table, no new columns, no later step's table.
        db.batch_execute(&format!(
            "DROP TABLE \"{s}\".history;
             DROP TABLE \"{s}\".queue_pauses;
             ALTER TABLE \"{s}\".items DROP COLUMN pushed_at, DROP COLUMN started_at;
             UPDATE \"{s}\".leaseq_meta SET value = 7 WHERE key = 'schema_version';"
        ))
        .await
        .expect("set up version 7");
        let queue = common::unique("history-v7");
        let mut inspector = PgInspector::connect(&url, &s).await.expect("inspector");
        assert!(inspector
            .history(&queue, &HistoryQuery::first(10))
            .await
            .expect("no record at 7")
            .is_empty());
        drop(inspector);
        let options = common::options()
            .schema(s.clone())
            .retention(Duration::from_secs(3600));
        let q =
            common::open_bytes(&url, &queue, Config::new(Duration::from_secs(30)), options).await;
        assert_eq!(
            schema_version(&db, &s).await.expect("version"),
            Some(SCHEMA_VERSION)
        );
        q.push(envelope("email", "{}")).await.expect("push");
        receive(&q).await.ack().await.expect("ack");
        let got = common::eventually("never recorded", || async {
            let got = q
                .store()
                .history(&HistoryQuery::first(10))
                .await
                .expect("history");
            (!got.is_empty()).then_some(got)
        })
        .await;
        assert_eq!(got.len(), 1);
        assert_eq!(
            (got[0].outcome, got[0].kind.as_deref()),
            (FinishOutcome::Acked, Some("email"))
        );
        assert!(got[0].pushed_at.is_some() && got[0].started_at.is_some());
        q.close().await.expect("close");
        common::drop_schema(&url, &s).await;
    });
}

#[test]
fn without_retention_nothing_is_recorded() {
    common::with_server(|url| async move {
        let queue = common::unique("history-off");
        // Options of its own: off whatever `LEASEQ_PG_RETENTION` says.
        let options = leaseq_postgres::Options::new()
            .schema(common::SCHEMA)
            .pool_size(4)
            .rescue_every(Duration::from_millis(50));
        let q =
            common::open_bytes(&url, &queue, Config::new(Duration::from_secs(30)), options).await;
        for _ in 0..3 {
            q.push(envelope("email", "{}")).await.expect("push");
            receive(&q).await.ack().await.expect("ack");
        }
        let id = q.push(b"x".to_vec()).await.expect("push");
        q.cancel(id).await.expect("cancel");
        let none = q
            .store()
            .history(&HistoryQuery::first(10))
            .await
            .expect("history");
        assert!(none.is_empty());
        let db = common::sql(&url).await;
        let n: i64 = db
            .query_one(
                &format!(
                    "SELECT count(*) FROM {}.history WHERE queue = $1",
                    common::SCHEMA
                ),
                &[&queue],
            )
            .await
            .expect("count")
            .get(0);
        assert_eq!(n, 0);
        q.close().await.expect("close");
    });
}
