//! The schema's SQL functions `push_job` and `push_item` (schema step 6): jobs pushed by
//! `psql` feed a Rust router pool, args decoded as the Rust side pushes them; a trigger
//! enqueues in its row's transaction; a version-5 schema migrated. Refusals and limits:
//! `tx_sql_refusals.rs`.

use leaseq_test_kit::pg as common;

use common::*;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::router::{args_of, kind_of, Envelope, JobKind, Router};
use leaseq_async::{Config, Job, ReceiveError};
use leaseq_postgres::{migrate, schema_version, SCHEMA_VERSION};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Email {
    to: String,
    cc: Vec<String>,
}
impl JobKind for Email {
    const KIND: &'static str = "email";
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Resize {
    width: u32,
    sharpen: Option<f64>,
}
impl JobKind for Resize {
    const KIND: &'static str = "résumé.resize"; // a kind of more bytes than characters
}

/// Runs `psql` on the test server with `sql`, failing the test on any error.
fn psql(url: &str, sql: &str) -> String {
    let out = std::process::Command::new("psql")
        .arg(plain(url))
        .env("PGCLIENTENCODING", "UTF8")
        .args(["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .expect("psql runs (it is on every machine of this project)");
    assert!(
        out.status.success(),
        "psql failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn jobs_pushed_by_psql_feed_a_rust_router_pool_args_as_rust_pushes_them() {
    common::with_server(|url| async move {
        let name = unique("txsql-router");
        let q = common::open_envelopes(&url, &name, Config::new(Duration::from_secs(30))).await;
        let s = SCHEMA.name();

        // psql, in one transaction of its own: the jobs and an unrelated statement.
        let ids = psql(
            &url,
            &format!(
                "BEGIN;
                 SELECT {s}.push_job('{name}', 'email', '{{\"to\": \"ann@example.com\", \"cc\": [\"bo@example.com\"]}}');
                 SELECT {s}.push_job('{name}', 'résumé.resize', jsonb_build_object('width', 640, 'sharpen', 0.5), priority => 5);
                 SELECT {s}.push_job(queue => '{name}', kind => 'email', args => '{{\"to\":\"cy@example.com\",\"cc\":[],\"extra\":1}}', key => 'welcome:cy');
                 SELECT {s}.push_job('{name}', 'résumé.resize', '{{\"width\": 1, \"sharpen\": null}}', delay => '1 hour');
                 COMMIT;"
            ),
        );
        let ids: Vec<u64> = ids.lines().map(|l| l.parse().expect("an id")).collect();
        assert_eq!(ids.len(), 4);
        assert!(ids.iter().all(|&id| id >= 1 << 62), "{ids:?}");

        // The stored bytes are the router's envelope of the args' JSON text.
        let db = sql(&url).await;
        let row = db
            .query_one(
                &format!("SELECT payload FROM {SCHEMA}.items WHERE id = $1"),
                &[&(ids[0] as i64)],
            )
            .await
            .expect("row");
        let payload: Vec<u8> = row.get(0);
        let text = br#"{"cc": ["bo@example.com"], "to": "ann@example.com"}"#;
        assert_eq!(
            payload,
            Envelope::from_parts("email", text).unwrap().as_bytes()
        );
        assert_eq!(
            (kind_of(&payload), args_of(&payload)),
            (Some("email"), Some(&text[..]))
        );

        let emails: Arc<Mutex<Vec<Email>>> = Arc::default();
        let resizes: Arc<Mutex<BTreeMap<u64, Resize>>> = Arc::default();
        let router = Router::new()
            .route::<Email, _>({
                let emails = emails.clone();
                move |job: Job<Email>| {
                    emails.lock().unwrap().push(job.item);
                    async { Ok(()) }
                }
            })
            .route::<Resize, _>({
                let resizes = resizes.clone();
                move |job: Job<Resize>| {
                    resizes.lock().unwrap().insert(job.id.get(), job.item);
                    async { Ok(()) }
                }
            });
        let pool = leaseq_tokio::Pool::builder(q.clone())
            .workers(2)
            .spawn_router(router);
        // Also a Rust push beside them, to compare.
        q.push(
            Envelope::new(&Email {
                to: "rust@example.com".into(),
                cc: vec![],
            })
            .unwrap(),
        )
        .await
        .expect("push");
        let deadline = std::time::Instant::now() + PATIENCE;
        while emails.lock().unwrap().len() < 3 || resizes.lock().unwrap().is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "not handled: {:?}",
                q.stats()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let report = pool.shutdown(Duration::from_secs(5)).await;
        assert_eq!(report.stats.permanent, 0, "nothing refused: {report:?}");
        let mut emails = emails.lock().unwrap().clone();
        emails.sort_by(|a, b| a.to.cmp(&b.to));
        let email = |to: &str, cc: &[&str]| Email {
            to: to.into(),
            cc: cc.iter().map(|c| c.to_string()).collect(),
        };
        assert_eq!(
            emails,
            vec![
                email("ann@example.com", &["bo@example.com"]),
                email("cy@example.com", &[]), // a field it does not know ignored
                email("rust@example.com", &[]),
            ]
        );
        let resizes = resizes.lock().unwrap().clone();
        assert_eq!(
            resizes.into_iter().collect::<Vec<_>>(),
            vec![(
                ids[1],
                Resize {
                    width: 640,
                    sharpen: Some(0.5)
                }
            )],
            "the delayed one still waits"
        );
        let keyed: i64 = db
            .query_one(
                &format!(
                    "SELECT count(*) FROM {SCHEMA}.items WHERE key = 'welcome:cy'::text::bytea"
                ),
                &[],
            )
            .await
            .expect("count")
            .get(0);
        assert_eq!(keyed, 0, "the keyed job ran and is gone");
    });
}

#[test]
fn a_trigger_enqueues_in_its_row_s_transaction() {
    common::with_server(|url| async move {
        let name = unique("txsql-trigger");
        let q = common::process(&url, &name, Config::new(Duration::from_secs(30))).await;
        let mut db = sql(&url).await;
        let table = format!("{SCHEMA}.\"orders-{name}\"");
        let s = SCHEMA.name();
        db.batch_execute(&format!(
            "CREATE TABLE {table} (id bigint PRIMARY KEY, total numeric NOT NULL);
             CREATE FUNCTION {s}.\"paid-{name}\"() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 PERFORM {s}.push_job('{name}', 'order_paid',
                     jsonb_build_object('order', NEW.id, 'total', NEW.total),
                     key => 'order:' || NEW.id);
                 RETURN NEW;
             END $$;
             CREATE TRIGGER paid AFTER INSERT ON {table}
                 FOR EACH ROW EXECUTE FUNCTION {s}.\"paid-{name}\"();"
        ))
        .await
        .expect("the table and its trigger");

        let tx = db.transaction().await.expect("begin");
        tx.execute(&format!("INSERT INTO {table} VALUES (1, 9.50)"), &[])
            .await
            .expect("insert");
        tx.rollback().await.expect("rollback");
        db.execute(&format!("INSERT INTO {table} VALUES (2, 12.00)"), &[])
            .await
            .expect("insert, committed");
        let d = receive(&q).await;
        assert_eq!(kind_of(d.item()), Some("order_paid"));
        let args: serde_json::Value =
            serde_json::from_slice(args_of(d.item()).unwrap()).expect("JSON args");
        assert_eq!(args, serde_json::json!({"order": 2, "total": 12.00}));
        d.ack().await.expect("ack");
        assert!(matches!(
            q.receive_timeout(Duration::from_millis(400)).await,
            Err(ReceiveError::Timeout)
        ));
        // The same order again while its job waits: the row's insert fails with the key's
        // error, its transaction rolled back, the job not doubled.
        db.execute(&format!("INSERT INTO {table} VALUES (3, 1)"), &[])
            .await
            .expect("insert");
        let e = db
            .batch_execute(&format!(
                "DELETE FROM {table} WHERE id = 3; INSERT INTO {table} VALUES (3, 1)"
            ))
            .await
            .expect_err("the key is held");
        let e = e.as_db_error().expect("the server's error");
        let (code, message) = (e.code().code(), e.message());
        assert_eq!(code, "23505");
        assert!(message.contains("'order:3'"), "{message}");
        receive(&q).await.ack().await.expect("ack");
    });
}

#[test]
fn a_version_5_schema_gets_the_functions_when_migrated() {
    common::with_server(|url| async move {
        let (s, mut db) = common::migrated_scratch(&url, "v5").await;
        db.batch_execute(&format!(
            "DROP FUNCTION \"{s}\".push_job, \"{s}\".push_item, \"{s}\".push_rows;
             DROP TABLE \"{s}\".queue_settings; DROP SEQUENCE \"{s}\".tx_ids;
             DROP TABLE \"{s}\".schedules;
             ALTER SEQUENCE \"{s}\".instances NO MAXVALUE;
             UPDATE \"{s}\".leaseq_meta SET value = 5 WHERE key = 'schema_version';"
        ))
        .await
        .expect("set up version 5");
        assert_eq!(schema_version(&db, &s).await.expect("version"), Some(5));
        migrate(&mut db, &s).await.expect("migrate from 5");
        // Run again over what it made (as the older migration tests do): no error.
        db.batch_execute(&format!(
            "UPDATE \"{s}\".leaseq_meta SET value = 5 WHERE key = 'schema_version'"
        ))
        .await
        .expect("back to 5");
        migrate(&mut db, &s).await.expect("migrate from 5 again");
        assert_eq!(
            schema_version(&db, &s).await.expect("version"),
            Some(SCHEMA_VERSION)
        );
        db.batch_execute(&format!(
            "INSERT INTO \"{s}\".queue_settings (queue, max_item_size) VALUES ('q', 1000)"
        ))
        .await
        .expect("a queue's limits, by hand");
        let id: i64 = db
            .query_one(&format!("SELECT \"{s}\".push_job('q', 'k', 'null')"), &[])
            .await
            .expect("push_job")
            .get(0);
        assert_eq!(id, 1 << 62, "the first transactional id");
        let max: i64 = db
            .query_one(
                "SELECT seqmax FROM pg_sequence WHERE seqrelid = to_regclass($1)",
                &[&format!("\"{s}\".instances")],
            )
            .await
            .expect("instances")
            .get(0);
        assert_eq!(max, (1 << 30) - 1, "store instances below the range");
        common::drop_schema(&url, &s).await;
    });
}
