//! `leaseq ... schedules`: the schedules a queue keeps, as a table and as JSON, on a SQLite
//! file and on the machine's Postgres server (skipping loudly without one, failing then
//! with `LEASEQ_PG_REQUIRED=1`). Each test prints what the command showed.

mod common;

use std::time::Duration;

use common::{postgres, shut, sqlite};
use leaseq_async::core::schedule::{CatchUp, Interval, Schedule};
use leaseq_async::{Config, LeaseQueue, Runtime, Scheduler, Store, Timestamp};
use leaseq_postgres::{BytesCodec, Options, Postgres};
use leaseq_test_kit::output::stdout;
use leaseq_test_kit::pg::{runtime, with_scratch_schema};
use leaseq_test_kit::sqlite::{open, remove, temp};
use serde_json::Value;

/// Two schedules, every minute (no lead: nothing pushed at its first step) and every 5 s
/// (10 s ahead): a step each, on the wall clock.
async fn step_both<R: Runtime, S: Store<Vec<u8>, Runtime = R>>(q: &LeaseQueue<Vec<u8>, R, S>) {
    let minute = Interval::new(Duration::from_secs(60), Timestamp::ZERO).unwrap();
    let rollup = Schedule::new("rollup", minute).unwrap();
    let five = Interval::new(Duration::from_secs(5), Timestamp::ZERO).unwrap();
    let sync = Schedule::new("sync", five)
        .unwrap()
        .with_lead(Duration::from_secs(10))
        .with_catch_up(CatchUp::Skip {
            grace: Duration::from_secs(1),
        });
    let job = |t: Timestamp| t.as_nanos().to_be_bytes().to_vec();
    Scheduler::new(rollup).run_once(q, job).await.unwrap();
    let step = Scheduler::new(sync).run_once(q, job).await.unwrap();
    assert!(step.pushed >= 1, "the 5 s schedule pushed ahead");
}

/// What both commands showed, checked: the table's rows and the JSON's fields.
fn check(table: &str, json: &str) {
    println!("{table}{json}");
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("schedule  last tick"), "{table}");
    assert!(
        lines[1].starts_with("rollup") && lines[1].ends_with("every 60s"),
        "{table}"
    );
    assert!(lines[1].contains("  -  "), "no tick pushed yet: {table}");
    assert!(
        lines[2].starts_with("sync") && lines[2].ends_with("every 5s"),
        "{table}"
    );
    let v: Value = serde_json::from_str(json).unwrap();
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["rollup", "sync"]);
    let sync = &v[1];
    let (last, next) = (
        sync["last_tick_ms"].as_i64().unwrap(),
        sync["next_tick_ms"].as_i64().unwrap(),
    );
    assert_eq!(next - last, 5_000, "{json}");
    assert_eq!(sync["cursor_ms"], sync["last_tick_ms"]);
    assert!(v[0]["last_tick_ms"].is_null());
}

#[test]
fn sqlite_schedules_as_a_table_and_json() {
    let path = temp("cli-schedules");
    let q = open(&path, Config::new(Duration::from_secs(30)), BytesCodec);
    smol::block_on(async {
        step_both(&q).await;
        q.close().await.unwrap();
    });
    shut(q);
    let table = stdout(&sqlite(&path, &["schedules"]));
    let json = stdout(&sqlite(&path, &["schedules", "--json"]));
    check(&table, &json);
    remove(&path);
}

#[test]
fn postgres_schedules_as_a_table_and_json() {
    with_scratch_schema("cli_schedules", |url, schema| {
        runtime().block_on(async {
            let q =
                leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(Config::new(Duration::from_secs(30)))
                    .name("reports".to_string())
                    .codec(BytesCodec)
                    .open(Postgres::url(url).options(Options::new().schema(schema).pool_size(2)))
                    .await
                    .unwrap();
            step_both(&q).await;
            q.close().await.unwrap();
        });
        let table = stdout(&postgres(url, schema, &["schedules", "reports"]));
        let json = stdout(&postgres(url, schema, &["schedules", "reports", "--json"]));
        // A queue the schema does not know (no rows, never opened, no schedule): an error.
        let none = postgres(url, schema, &["schedules", "other"]);
        assert_eq!(none.status.code(), Some(1));
        let err = String::from_utf8_lossy(&none.stderr);
        assert!(err.contains("no queue \"other\""), "{err}");
        check(&table, &json);
    });
}
