//! The SQL functions' refusals and limits: every refusal the Rust API makes is an error
//! with its own SQLSTATE and a message (and hint) that says what to do; each open records
//! its queue's limits for them, unless told not to (a tool's open).

use leaseq_test_kit::pg as common;

use common::*;

use std::time::Duration;

use leaseq_async::Config;
use leaseq_postgres::Postgres;
use tokio_postgres::Client;

/// `sql`'s error: its SQLSTATE, message, detail and hint.
async fn refused(db: &Client, sql: &str) -> (String, String, String, String) {
    match db.batch_execute(sql).await {
        Ok(()) => panic!("expected an error from {sql}"),
        Err(e) => {
            let db = e
                .as_db_error()
                .unwrap_or_else(|| panic!("not a server error: {e}"));
            (
                db.code().code().to_string(),
                db.message().to_string(),
                db.detail().unwrap_or_default().to_string(),
                db.hint().unwrap_or_default().to_string(),
            )
        }
    }
}

#[test]
fn every_refusal_is_an_error_with_its_sqlstate_and_what_to_do() {
    common::with_server(|url| async move {
        let name = unique("txsql-refuse");
        let options = options().max_item_size(20);
        let config = Config::new(Duration::from_secs(30)).with_capacity(2);
        let _q = common::open::<Vec<u8>, _>(
            &url,
            name.clone(),
            config,
            leaseq_postgres::BytesCodec,
            options,
        )
        .await;
        let db = sql(&url).await;
        let s = SCHEMA.name();
        let push = |args: &str| format!("SELECT {s}.push_item({args})");
        let job = |args: &str| format!("SELECT {s}.push_job({args})");

        let (code, message, _, hint) = refused(&db, &push("'no-such-queue', '\\x01'")).await;
        assert_eq!(code, "42704");
        assert!(
            message.starts_with("leaseq: no queue 'no-such-queue' in schema"),
            "{message}"
        );
        assert!(hint.contains("queue_settings"), "{hint}");

        let (code, message, _, hint) = refused(
            &db,
            &push(&format!("'{name}', convert_to(repeat('x', 21), 'UTF8')")),
        )
        .await;
        assert_eq!(code, "54000");
        assert!(
            message.contains("21 bytes, over the max_item_size"),
            "{message}"
        );
        assert!(hint.contains("Options::max_item_size"), "{hint}");

        let (code, message, ..) =
            refused(&db, &push(&format!("'{name}', '\\x01', priority => 8"))).await;
        assert_eq!(code, "22003");
        assert_eq!(message, "leaseq: priority 8 is out of range 0..7");

        let key = "k".repeat(65);
        let (code, message, ..) =
            refused(&db, &push(&format!("'{name}', '\\x01', key => '{key}'"))).await;
        assert_eq!(code, "22001");
        assert!(message.contains("65 bytes"), "{message}");

        let (code, ..) = refused(&db, &push(&format!("'{name}', '\\x01', delay => '-1 s'"))).await;
        assert_eq!(code, "22023");
        let (code, message, ..) = refused(
            &db,
            &push(&format!("'{name}', '\\x01', delay => '10 s', ttl => '5 s'")),
        )
        .await;
        assert_eq!(code, "22023");
        assert!(message.contains("time to live"), "{message}");
        let (code, ..) = refused(&db, &push(&format!("'{name}', NULL"))).await;
        assert_eq!(code, "22004");

        let (code, message, ..) = refused(&db, &job(&format!("'{name}', '', '{{}}'"))).await;
        assert_eq!(
            (code.as_str(), message.as_str()),
            (
                "22023",
                "leaseq: a job kind must be 1 to 255 bytes long, not 0"
            )
        );
        let long = "é".repeat(128); // 256 bytes
        let (code, message, ..) = refused(&db, &job(&format!("'{name}', '{long}', '{{}}'"))).await;
        assert_eq!(
            (code.as_str(), message.as_str()),
            (
                "22023",
                "leaseq: a job kind must be 1 to 255 bytes long, not 256"
            )
        );
        let (code, ..) = refused(&db, &job(&format!("'{name}', 'k', NULL"))).await;
        assert_eq!(code, "22004");

        // A held key: the holder named; then the capacity of 2 reached.
        let held: i64 = db
            .query_one(
                &push(&format!("'{name}', '\\x01', key => 'only-once'")),
                &[],
            )
            .await
            .expect("pushed")
            .get(0);
        let (code, message, detail, _) = refused(
            &db,
            &push(&format!("'{name}', '\\x02', key => 'only-once'")),
        )
        .await;
        assert_eq!(code, "23505");
        assert!(
            message.contains(&format!("held by item {held}")),
            "{message}"
        );
        assert_eq!(detail, format!("held by item {held}"));
        db.query_one(&push(&format!("'{name}', '\\x03'")), &[])
            .await
            .expect("the second fits");
        let (code, message, ..) = refused(&db, &push(&format!("'{name}', '\\x04'"))).await;
        assert_eq!(code, "53400");
        assert!(message.contains("is full (capacity 2)"), "{message}");
        let (code, ..) = refused(
            &db,
            &format!(
                "BEGIN ISOLATION LEVEL REPEATABLE READ; {}; COMMIT",
                push(&format!("'{name}', '\\x05'"))
            ),
        )
        .await;
        assert_eq!(code, "0A000");
        db.batch_execute("ROLLBACK").await.expect("rollback");
    });
}

#[test]
fn each_open_records_its_limits_unless_told_not_to() {
    common::with_server(|url| async move {
        let name = unique("txsql-limits");
        let db = sql(&url).await;
        let limits = || async {
            let row = db
                .query_one(
                    &format!(
                        "SELECT max_item_size, capacity FROM {SCHEMA}.queue_settings WHERE queue = $1"
                    ),
                    &[&name],
                )
                .await
                .expect("the queue's row");
            (row.get::<_, i64>(0), row.get::<_, Option<i64>>(1))
        };
        let open = |options: leaseq_postgres::Options, config: Config| {
            leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(config)
                .name(name.clone())
                .codec(leaseq_postgres::BytesCodec)
                .open(Postgres::url(&url).options(options))
        };
        let vis = Duration::from_secs(30);
        let a = open(
            options().max_item_size(100),
            Config::new(vis).with_capacity(5),
        )
        .await
        .expect("open");
        assert_eq!(limits().await, (100, Some(5)));
        let tool = open(options().record_limits(false), Config::new(vis))
            .await
            .expect("open");
        assert_eq!(
            limits().await,
            (100, Some(5)),
            "a tool's open changes nothing"
        );
        let b = open(options(), Config::new(vis)).await.expect("open");
        assert_eq!(limits().await, (256 * 1024, None), "the last open's");
        drop((a, tool, b));
    });
}
