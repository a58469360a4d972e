//! `leaseq ... schedules`: the schedules a queue keeps, as a table and as JSON, on a SQLite
//! file and on the machine's Postgres server (skipping loudly without one, failing then
//! with `LEASEQ_PG_REQUIRED=1`). Each test prints what the command showed.

use std::process::Output;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leaseq_async::core::schedule::{CatchUp, Interval, Schedule};
use leaseq_async::{Config, LeaseQueue, Runtime, Scheduler, Store, Timestamp};
use leaseq_postgres::{BytesCodec, Options, Postgres};
use leaseq_smol::SmolRuntime;
use leaseq_sqlite::Sqlite;
use leaseq_test_kit::output::{self, stdout};
use leaseq_test_kit::pg::{drop_schema, runtime, scratch_schema, server};
use leaseq_test_kit::sqlite::remove;
use serde_json::Value;

fn leaseq(args: &[&str]) -> Output {
    output::run(env!("CARGO_BIN_EXE_leaseq"), args)
}

fn nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

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
    let path = std::env::temp_dir().join(format!(
        "leaseq-cli-schedules-{}-{}.db",
        std::process::id(),
        nanos()
    ));
    let q = smol::block_on(
        LeaseQueue::builder(Config::new(Duration::from_secs(30)))
            .runtime(SmolRuntime::global())
            .codec(leaseq_sqlite::BytesCodec)
            .open(Sqlite::file(&path)),
    )
    .unwrap();
    smol::block_on(async {
        step_both(&q).await;
        q.close().await.unwrap();
    });
    let store = q.store().clone();
    drop(q);
    while std::sync::Arc::strong_count(&store) > 1 {
        std::thread::yield_now();
    }
    drop(store);
    let file = path.to_str().unwrap();
    let table = stdout(&leaseq(&["sqlite", file, "schedules"]));
    let json = stdout(&leaseq(&["sqlite", file, "schedules", "--json"]));
    check(&table, &json);
    remove(&path);
}

#[test]
fn postgres_schedules_as_a_table_and_json() {
    let Some(url) = server() else { return };
    let rt = runtime();
    let schema = scratch_schema("cli_schedules");
    rt.block_on(async {
        let q = leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(Config::new(Duration::from_secs(30)))
            .name("reports".to_string())
            .codec(BytesCodec)
            .open(Postgres::url(&url).options(Options::new().schema(&schema).pool_size(2)))
            .await
            .unwrap();
        step_both(&q).await;
        q.close().await.unwrap();
    });
    let args = |json: bool| {
        let mut a = vec![
            "postgres",
            url.as_str(),
            "--schema",
            schema.as_str(),
            "schedules",
            "reports",
        ];
        if json {
            a.push("--json");
        }
        leaseq(&a)
    };
    let table = stdout(&args(false));
    let json = stdout(&args(true));
    // A queue the schema does not know (no rows, never opened, no schedule): an error.
    let none = leaseq(&[
        "postgres",
        url.as_str(),
        "--schema",
        schema.as_str(),
        "schedules",
        "other",
    ]);
    assert_eq!(none.status.code(), Some(1));
    let err = String::from_utf8_lossy(&none.stderr);
    assert!(err.contains("no queue \"other\""), "{err}");
    rt.block_on(drop_schema(&url, &schema));
    check(&table, &json);
}
