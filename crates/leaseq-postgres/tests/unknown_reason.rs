//! A dead letter whose reason code this version does not know (written by a newer one)
//! reads as `Reason::Dropped` in the dead-letter page, its error kept, and can be redriven:
//! on purpose, as a SQLite file's does at open (`crates/leaseq-sqlite/tests/unknown_reason.rs`).
//! The schema's inspector shows it with no reason.

use leaseq_test_kit::pg as common;

use std::time::Duration;

use leaseq_async::{Config, Page, Reason};
use leaseq_postgres::{PgInspector, PgQueue};

use common::{process, receive, sql, unique, SCHEMA};

#[test]
fn an_unknown_reason_code_reads_as_dropped() {
    common::with_server(|url| async move {
        let queue = unique("unknown-reason");
        let q: PgQueue<Vec<u8>> = process(&url, &queue, Config::new(Duration::from_secs(30))).await;
        let id = q.push(b"job".to_vec()).await.expect("push");
        receive(&q).await.dead_letter("poison").await.expect("bury");
        let changed = sql(&url)
            .await
            .execute(
                &format!("UPDATE {SCHEMA}.items SET reason = 200 WHERE id = $1"),
                &[&(id.get() as i64)],
            )
            .await
            .expect("a newer version's reason");
        assert_eq!(changed, 1);

        let dead = q.dead_letters(Page::first(10)).await.expect("page");
        assert_eq!(dead.len(), 1);
        assert_eq!(dead[0].reason, Reason::Dropped);
        assert_eq!(dead[0].last_error.as_deref(), Some("poison"));

        let mut inspector = PgInspector::connect(&url, SCHEMA.name())
            .await
            .expect("inspector");
        let shown = inspector
            .dead_letters(&queue, Page::first(10))
            .await
            .expect("inspect");
        assert_eq!(shown.len(), 1);
        assert_eq!(shown[0].reason, None);

        assert_eq!(q.redrive(id).await, Ok(id));
        q.close().await.expect("close");
    });
}
