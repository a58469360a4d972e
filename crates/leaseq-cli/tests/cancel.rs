//! `leaseq ... cancel` and `leaseq ... item`, written once over the operator interface, on
//! a SQLite file and a Postgres schema: `item` shows one item, live or dead; `cancel`
//! takes the waiting items a job kind and an id range name, ready and delayed, leaves
//! those in flight to their holders and the dead letters where they are, needs `--yes`,
//! and is refused on a file another process owns. The Postgres case skips loudly without a
//! server; fails then with `LEASEQ_PG_REQUIRED=1`.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use leaseq_async::Config;
use leaseq_postgres::Options;
use leaseq_sqlite::{BytesCodec, SqliteQueue};
use leaseq_test_kit::output::{self, fails, json, stdout};
use leaseq_test_kit::pg::{drop_schema, open_bytes, runtime, server, unique};
use leaseq_test_kit::sqlite::{open, remove, temp};
use leaseq_test_kit::steps::cli_fixture;
use serde_json::Value;

fn leaseq(args: &[&str]) -> Output {
    output::run(env!("CARGO_BIN_EXE_leaseq"), args)
}

fn sqlite(path: &Path, args: &[&str]) -> Output {
    leaseq(&[&["sqlite", path.to_str().unwrap()][..], args].concat())
}

fn config() -> Config {
    Config::new(Duration::from_secs(30)).with_max_attempts(1)
}

/// Closes `q` and waits until its store is gone, so that the file is unlocked on return.
fn shut(q: SqliteQueue<Vec<u8>, leaseq_smol::SmolRuntime, BytesCodec>) {
    smol::block_on(async { q.close().await }).unwrap();
    let store = q.store().clone();
    drop(q);
    while std::sync::Arc::strong_count(&store) > 1 {
        std::thread::yield_now();
    }
}

#[test]
fn item_and_cancel_on_a_file() {
    let path = temp("cancel");
    let q = open(&path, config(), BytesCodec);
    smol::block_on(cli_fixture(&q));
    shut(q);
    let live = json(&sqlite(&path, &["peek", "--json"]));
    let invoice = live[0]["id"].as_u64().unwrap().to_string();
    let dead = json(&sqlite(&path, &["dead", "--json"]));
    let email = dead[0]["id"].as_u64().unwrap().to_string();

    let one = json(&sqlite(&path, &["item", &invoice, "--json"]));
    assert_eq!(
        (&one["state"], &one["payload"]),
        (&"ready".into(), &"invoice 981".into())
    );
    let one = json(&sqlite(&path, &["item", &email, "--json"]));
    assert_eq!(
        (&one["state"], &one["kind"]),
        (&"dead".into(), &"email".into())
    );
    let table = stdout(&sqlite(&path, &["item", &email]));
    assert!(
        table.contains("upstream 503"),
        "a dead letter's table: {table}"
    );

    fails(
        &sqlite(&path, &["cancel"]),
        2,
        "cancel deletes items for good: add --yes",
    );
    // A kind only dead letters have: nothing waiting taken.
    let none = json(&sqlite(
        &path,
        &["cancel", "--kind", "sms", "--yes", "--json"],
    ));
    assert_eq!(none["cancelled"], 0);
    let range = [
        "cancel", "--min-id", &invoice, "--max-id", &invoice, "--yes", "--json",
    ];
    assert_eq!(json(&sqlite(&path, &range))["cancelled"], 1);
    fails(
        &sqlite(&path, &["item", &invoice]),
        1,
        "no live item or dead letter has this id",
    );

    // Owned by a running process: refused, nothing changed.
    let q = open(&path, config(), BytesCodec);
    fails(
        &sqlite(&path, &["cancel", "--yes"]),
        1,
        "in use by another process: stop it",
    );
    shut(q);
    let table = stdout(&sqlite(&path, &["cancel", "--yes"]));
    assert_eq!(
        table, "cancelled: 1 ready and delayed items\n",
        "the delayed one"
    );
    let stats = json(&sqlite(&path, &["stats", "--json"]));
    assert_eq!(
        (&stats["live"], &stats["dead"]),
        (&Value::from(0), &Value::from(3))
    );
    remove(&path);
}

#[test]
fn a_cancel_on_postgres_leaves_an_item_in_flight_to_its_holder() {
    let Some(url) = server() else { return };
    let schema = unique("leaseq_cli_cancel").replace('-', "_");
    let options = || Options::new().schema(&schema).pool_size(2);
    let rt = runtime();
    let q = rt.block_on(async {
        let q = open_bytes(&url, "jobs", config(), options()).await;
        cli_fixture(&q).await;
        q
    });
    let pg = |args: &[&str]| leaseq(&[&["postgres", &url, "--schema", &schema][..], args].concat());
    // The worker holds the ready invoice.
    let held = rt
        .block_on(q.receive_timeout(Duration::from_secs(15)))
        .unwrap();
    assert_eq!(held.item(), b"invoice 981");

    fails(&pg(&["cancel", "jobz", "--yes"]), 1, "no queue \"jobz\"");
    let done = json(&pg(&["cancel", "jobs", "--yes", "--json"]));
    assert_eq!(done["cancelled"], 1, "the delayed item only");
    let stats = json(&pg(&["stats", "jobs", "--json"]));
    assert_eq!(
        (
            &stats["ready"],
            &stats["delayed"],
            &stats["in_flight"],
            &stats["dead"]
        ),
        (
            &Value::from(0),
            &Value::from(0),
            &Value::from(1),
            &Value::from(3)
        )
    );
    let id = held.id().get().to_string();
    assert_eq!(
        json(&pg(&["item", "jobs", &id, "--json"]))["state"],
        "in flight"
    );
    rt.block_on(async {
        held.ack().await.unwrap();
        q.close().await.unwrap();
        drop_schema(&url, &schema).await;
    });
}
