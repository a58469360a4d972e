//! The `leaseq` binary on the machine's PostgreSQL server: each command's table and JSON,
//! writes through the store, bad arguments, and reads that change nothing (every table of
//! the schema row-identical before and after). Skips loudly without a server, fails then
//! with `LEASEQ_PG_REQUIRED=1`.

mod common;

use std::time::Duration;

use common::{leaseq, postgres as pg};
use leaseq_async::Config;
use leaseq_postgres::{Options, PgQueue};
use leaseq_test_kit::output::{fails, json, json_rows, stdout};
use leaseq_test_kit::pg::{runtime, sql, with_scratch_schema};
use leaseq_test_kit::steps::cli_fixture;
use serde_json::Value;

async fn open(url: &str, schema: &str, queue: &str) -> PgQueue<Vec<u8>> {
    let config = Config::new(Duration::from_secs(30)).with_max_attempts(1);
    let options = Options::new().schema(schema).pool_size(2);
    leaseq_test_kit::pg::open_bytes(url, queue, config, options).await
}

/// Queue `jobs`: a ready item, a delayed one, and three dead letters (an email nacked out
/// of its attempts, an sms rejected, raw bytes nacked); queue `other`: one ready item.
fn fixture(url: &str, schema: &str) {
    runtime().block_on(async {
        let q = open(url, schema, "jobs").await;
        cli_fixture(&q).await;
        q.close().await.unwrap();
        let other = open(url, schema, "other").await;
        other.push(b"elsewhere".to_vec()).await.unwrap();
        other.close().await.unwrap();
        // Opened (its limits recorded), never pushed to: known, with no rows.
        open(url, schema, "empty").await.close().await.unwrap();
    });
}

/// Runs `test` with the server and a schema of its own (named after `name`) holding the
/// [`fixture`], then drops the schema; skips (after a loud note) without a server.
fn on_fixture(name: &str, test: impl FnOnce(&str, &str)) {
    with_scratch_schema(&format!("cli_{name}"), |url, s| {
        fixture(url, s);
        test(url, s);
    });
}

/// Every row of every table of `schema`, as text, sorted.
fn snapshot(url: &str, schema: &str) -> Vec<(String, String)> {
    runtime().block_on(async {
        let client = sql(url).await;
        let tables = client
            .query(
                "SELECT table_name::text FROM information_schema.tables
                 WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY 1",
                &[&schema],
            )
            .await
            .unwrap();
        let mut out = Vec::new();
        for t in tables {
            let table: String = t.get(0);
            let rows: String = client
                .query_one(
                    &format!(
                        "SELECT coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '')
                         FROM \"{schema}\".\"{table}\" t"
                    ),
                    &[],
                )
                .await
                .unwrap()
                .get(0);
            out.push((table, rows));
        }
        assert!(out.iter().any(|(t, _)| t == "items"), "{out:?}");
        out
    })
}

#[test]
fn read_commands_show_the_schema_and_change_no_row() {
    on_fixture("reads", |url, s| {
        let before = snapshot(url, s);

        let queues = json_rows(&pg(url, s, &["queues", "--json"]));
        assert_eq!(queues.len(), 2);
        assert_eq!(queues[0]["queue"], "jobs");
        assert_eq!(
            (
                &queues[0]["ready"],
                &queues[0]["delayed"],
                &queues[0]["dead"]
            ),
            (&Value::from(1), &Value::from(1), &Value::from(3))
        );
        assert_eq!(
            (&queues[1]["queue"], &queues[1]["ready"]),
            (&Value::from("other"), &Value::from(1))
        );
        let table = stdout(&pg(url, s, &["queues"]));
        assert!(table.contains("jobs") && table.contains("other"), "{table}");

        let stats = json(&pg(url, s, &["stats", "jobs", "--json"]));
        assert_eq!(
            (&stats["live"], &stats["dead"]),
            (&Value::from(2), &Value::from(3))
        );
        // A queue that was opened and has no rows counts zero; one the schema does not know
        // (a mistyped name) is an error.
        let stats = json(&pg(url, s, &["stats", "empty", "--json"]));
        assert_eq!(stats["live"], 0, "a known queue with no rows counts zero");
        for command in [
            &["stats", "jobz"][..],
            &["peek", "jobz", "--json"],
            &["dead", "jobz"],
            &["schedules", "jobz"],
        ] {
            fails(&pg(url, s, command), 1, "no queue \"jobz\" in schema");
        }
        fails(
            &pg(url, s, &["stats", "jobz"]),
            1,
            "its queues: jobs, other",
        );

        let peek = json_rows(&pg(url, s, &["peek", "jobs", "--json"]));
        assert_eq!(peek.len(), 2);
        assert_eq!(
            (&peek[0]["state"], &peek[0]["payload"]),
            (&Value::from("ready"), &Value::from("invoice 981"))
        );
        assert_eq!(peek[1]["state"], "delayed");
        // Postgres ids are above 2^32 (the instance in the high bits): printed whole.
        let id = peek[0]["id"].as_u64().unwrap();
        assert!(id > u64::from(u32::MAX), "{id}");
        let table = stdout(&pg(url, s, &["peek", "jobs"]));
        assert!(
            table
                .lines()
                .nth(1)
                .unwrap()
                .trim_start()
                .starts_with(&format!("{id}  ")),
            "{table}"
        );
        assert!(
            table.contains("\"invoice 981\"") && table.contains("in "),
            "{table}"
        );

        let dead = json_rows(&pg(url, s, &["dead", "jobs", "--json"]));
        assert_eq!(dead.len(), 3);
        assert_eq!(
            (&dead[0]["kind"], &dead[0]["reason"]),
            (&Value::from("email"), &Value::from("nacked"))
        );
        assert_eq!(
            (&dead[1]["kind"], &dead[1]["reason"]),
            (&Value::from("sms"), &Value::from("rejected"))
        );
        assert_eq!(dead[1]["last_error"], "no such number");
        assert_eq!(dead[0]["args"], serde_json::json!({"to": 17}), "an object");
        assert_eq!(
            (&dead[2]["kind"], &dead[2]["payload_hex"]),
            (&Value::Null, &Value::from("deadbeef"))
        );
        let first = dead[0]["id"].as_u64().unwrap().to_string();
        let page = json(&pg(
            url,
            s,
            &["dead", "jobs", "--json", "--limit", "1", "--after", &first],
        ));
        assert_eq!(
            (page.as_array().map(Vec::len), &page[0]["kind"]),
            (Some(1), &Value::from("sms"))
        );
        let table = stdout(&pg(url, s, &["dead", "jobs"]));
        for cell in ["email", "sms", "rejected", "upstream 503", "0xdeadbeef"] {
            assert!(table.contains(cell), "{cell} not in {table}");
        }

        // What a bulk call with a filter would take.
        let emails = json(&pg(url, s, &["dead", "jobs", "--json", "--kind", "email"]));
        assert_eq!(
            (emails.as_array().map(Vec::len), &emails[0]["kind"]),
            (Some(1), &Value::from("email"))
        );
        let nacked = json(&pg(
            url,
            s,
            &["dead", "jobs", "--json", "--reason", "nacked"],
        ));
        assert_eq!(
            nacked.as_array().map(Vec::len),
            Some(2),
            "the email and the raw bytes"
        );
        let none = json(&pg(
            url,
            s,
            &[
                "dead", "jobs", "--json", "--reason", "rejected", "--kind", "email",
            ],
        ));
        assert_eq!(none, Value::Array(Vec::new()));

        assert_eq!(snapshot(url, s), before, "a read changed a row");
    });
}

#[test]
fn writes_redrive_and_purge_through_the_store() {
    on_fixture("writes", |url, s| {
        let dead = json(&pg(url, s, &["dead", "jobs", "--json"]));
        let raw = dead[2]["id"].as_u64().unwrap().to_string();

        assert_eq!(
            json(&pg(url, s, &["redrive", "jobs", "--id", &raw, "--json"]))["redriven"],
            1
        );
        let n = json(&pg(
            url,
            s,
            &["redrive", "jobs", "--all", "--kind", "email", "--json"],
        ));
        assert_eq!(n["redriven"], 1);
        let n = json(&pg(
            url,
            s,
            &[
                "purge-dead",
                "jobs",
                "--reason",
                "rejected",
                "--yes",
                "--json",
            ],
        ));
        assert_eq!(n["purged"], 1);
        let stats = json(&pg(url, s, &["stats", "jobs", "--json"]));
        assert_eq!(
            (&stats["ready"], &stats["dead"]),
            (&Value::from(3), &Value::from(0))
        );
        let table = stdout(&pg(url, s, &["purge", "jobs", "--yes"]));
        assert!(
            table.contains("4 ready and delayed items deleted"),
            "{table}"
        );
        assert_eq!(json(&pg(url, s, &["stats", "jobs", "--json"]))["live"], 0);
        assert_eq!(
            json(&pg(url, s, &["stats", "other", "--json"]))["live"],
            1,
            "another queue untouched"
        );
        fails(
            &pg(url, s, &["redrive", "jobs", "--id", &raw]),
            1,
            "cannot redrive",
        );
    });
}

/// `pause` and `resume` on one queue of the schema: shown by `stats` and `queues`, the other
/// queue untouched, a queue opened afterwards paused.
#[test]
fn pause_and_resume_one_queue() {
    on_fixture("pause", |url, s| {
        let paused = json(&pg(url, s, &["pause", "jobs", "--json"]));
        assert_eq!(
            (&paused["paused"], &paused["changed"]),
            (&Value::from(true), &Value::from(true))
        );
        assert_eq!(
            json(&pg(url, s, &["stats", "jobs", "--json"]))["paused"],
            true
        );
        assert_eq!(
            json(&pg(url, s, &["stats", "other", "--json"]))["paused"],
            false
        );
        let queues = json(&pg(url, s, &["queues", "--json"]));
        let flags: Vec<(&Value, &Value)> = queues
            .as_array()
            .unwrap()
            .iter()
            .map(|q| (&q["queue"], &q["paused"]))
            .collect();
        assert_eq!(
            flags,
            [
                (&Value::from("jobs"), &Value::from(true)),
                (&Value::from("other"), &Value::from(false))
            ]
        );
        runtime().block_on(async {
            let q = open(url, s, "jobs").await;
            let st = q.refresh_stats().await.unwrap();
            assert!(st.paused && st.ready > 0, "{st:?}");
            assert!(q.try_receive().is_none(), "nothing claimed while paused");
            q.close().await.unwrap();
        });
        let resumed = json(&pg(url, s, &["resume", "jobs", "--json"]));
        assert_eq!(resumed["changed"], true);
        assert_eq!(
            json(&pg(url, s, &["stats", "jobs", "--json"]))["paused"],
            false
        );
    });
}

#[test]
fn bad_arguments_and_a_missing_schema_say_what_is_wrong() {
    on_fixture("bad", |url, s| {
        let before = snapshot(url, s);
        fails(&pg(url, s, &["purge", "jobs"]), 2, "add --yes");
        fails(&pg(url, s, &["redrive", "jobs"]), 2, "--id");
        fails(
            &pg(url, s, &["redrive", "jobs", "--all", "--reason", "bored"]),
            2,
            "unknown reason",
        );
        fails(&pg(url, s, &["stats"]), 2, "<QUEUE>");
        // Writes to a queue the schema does not know: refused before a store is opened.
        fails(
            &pg(url, s, &["redrive", "jobz", "--all"]),
            1,
            "no queue \"jobz\"",
        );
        fails(
            &pg(url, s, &["purge", "jobz", "--yes"]),
            1,
            "no queue \"jobz\"",
        );
        assert_eq!(snapshot(url, s), before, "refused commands changed nothing");

        let missing = leaseq_test_kit::pg::scratch_schema("cli_missing");
        fails(&pg(url, &missing, &["queues"]), 1, "no leaseq schema");
        fails(
            &pg(url, &missing, &["purge", "jobs", "--yes"]),
            1,
            "no leaseq schema",
        );
        fails(&pg(url, "Not-A-Schema", &["queues"]), 1, "Not-A-Schema");
        fails(
            &leaseq(&["postgres", "host=127.0.0.1 bogus_key=1", "queues"]),
            1,
            "bad connection string: invalid connection string: unknown option `bogus_key`",
        );
    });
}
