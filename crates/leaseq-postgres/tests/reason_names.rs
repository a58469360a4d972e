//! The reasons' names for SQL readers (migration 3): the `reasons` table names every
//! `Reason` code as `Reason::as_str` does, the `dead_letters` view shows a dead letter's
//! reason by name, and a database at version 3 gets both when it is opened.

use leaseq_test_kit::pg as common;

use common::*;

use std::time::Duration;

use leaseq_async::{Config, Reason};
use leaseq_postgres::{migrate, schema_version, SCHEMA_VERSION};

/// The `reasons` table is `Reason::ALL` with `Reason::as_str`, row for row: a reason added
/// to the core without a migration naming it fails here.
#[test]
fn the_reasons_table_names_every_reason() {
    common::with_server(|url| async move {
        let mut db = sql(&url).await;
        migrate(&mut db, SCHEMA.name()).await.expect("migrate");
        let rows = db
            .query(
                &format!("SELECT code, name FROM {SCHEMA}.reasons ORDER BY code"),
                &[],
            )
            .await
            .expect("select reasons");
        let got: Vec<(i16, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        let want: Vec<(i16, String)> = Reason::ALL
            .iter()
            .map(|r| (i16::from(r.code()), r.as_str().to_string()))
            .collect();
        assert_eq!(got, want);
    });
}

/// A rejected item (a permanent error) and a nacked one at their last attempt: the view
/// shows each with its reason's code and name, its error and its attempts.
#[test]
fn the_dead_letters_view_shows_the_reason_by_name() {
    common::with_server(|url| async move {
        let queue = unique("reason-names");
        let config = Config::new(Duration::from_secs(30)).with_max_attempts(1);
        let q = process(&url, &queue, config).await;
        q.push(b"poison".to_vec()).await.expect("push");
        q.push(b"flaky".to_vec()).await.expect("push");
        let d = receive(&q).await;
        assert_eq!(d.item().as_slice(), b"poison");
        d.dead_letter("cannot parse").await.expect("dead letter");
        let d = receive(&q).await;
        d.nack("down").await.expect("nack");
        let db = sql(&url).await;
        let rows = db
            .query(
                &format!(
                    "SELECT reason, reason_name, last_error, attempts, payload
                     FROM {SCHEMA}.dead_letters WHERE queue = $1 ORDER BY id"
                ),
                &[&queue],
            )
            .await
            .expect("select the view");
        let got: Vec<(i16, String, String, i32, Vec<u8>)> = rows
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
            .collect();
        assert_eq!(
            got,
            [
                (
                    5,
                    "rejected".into(),
                    "cannot parse".into(),
                    1,
                    b"poison".to_vec()
                ),
                (1, "nacked".into(), "down".into(), 1, b"flaky".to_vec()),
            ]
        );
    });
}

/// A database migrated to version 3 only (as before this migration existed) gets the table
/// and the view at its next `migrate`; its rows stay.
#[test]
fn a_version_3_database_gets_the_names_when_migrated() {
    common::with_server(|url| async move {
        let (s, mut db) = common::migrated_scratch(&url, "v2").await;
        // Back to what version 3 had: no view, no table, version 3, and a dead letter.
        db.batch_execute(&format!(
            "DROP VIEW \"{s}\".dead_letters; DROP TABLE \"{s}\".reasons;
             UPDATE \"{s}\".leaseq_meta SET value = 3 WHERE key = 'schema_version';
             INSERT INTO \"{s}\".items (id, queue, state, visible_at, reason, last_error,
                                         dead_at, attempts, payload)
             VALUES (7, 'old', 2, now(), 2, 'slow', now(), 3, '\\x01');"
        ))
        .await
        .expect("set up version 3");
        assert_eq!(schema_version(&db, &s).await.expect("version"), Some(3));
        migrate(&mut db, &s).await.expect("migrate from 3");
        assert_eq!(
            schema_version(&db, &s).await.expect("version"),
            Some(SCHEMA_VERSION)
        );
        let row = db
            .query_one(
                &format!("SELECT id, reason_name, attempts FROM \"{s}\".dead_letters"),
                &[],
            )
            .await
            .expect("select the view");
        let got: (i64, String, i32) = (row.get(0), row.get(1), row.get(2));
        assert_eq!(got, (7, "timed out".to_string(), 3));
        common::drop_schema(&url, &s).await;
    });
}
