//! The `leaseq` binary writing a real SQLite queue file through the store: redrive and
//! purge, pause and resume kept in the file for its next owner.

mod common;

use common::{fixture, open, shut, snapshot, sqlite};
use leaseq_test_kit::output::{fails, json, stdout};
use leaseq_test_kit::sqlite::remove;
use serde_json::Value;

#[test]
fn writes_redrive_and_purge_through_the_store() {
    let path = fixture("writes");
    let dead = json(&sqlite(&path, &["dead", "--json"]));
    let raw = dead[2]["id"].as_u64().unwrap().to_string();

    let one = json(&sqlite(&path, &["redrive", "--id", &raw, "--json"]));
    assert_eq!(one["redriven"], 1);
    let n = json(&sqlite(
        &path,
        &["redrive", "--all", "--reason", "timed-out", "--json"],
    ));
    assert_eq!(n["redriven"], 0);
    let n = json(&sqlite(
        &path,
        &["redrive", "--all", "--kind", "email", "--json"],
    ));
    assert_eq!(n["redriven"], 1);
    let table = stdout(&sqlite(
        &path,
        &["purge-dead", "--reason", "rejected", "--yes"],
    ));
    assert!(table.contains("1 dead letters deleted"), "{table}");
    let stats = json(&sqlite(&path, &["stats", "--json"]));
    assert_eq!(
        (&stats["ready"], &stats["dead"]),
        (&Value::from(3), &Value::from(0))
    );

    let purged = json(&sqlite(&path, &["purge", "--yes", "--json"]));
    assert_eq!(purged["purged"], 4, "three ready and the delayed one");
    let stats = json(&sqlite(&path, &["stats", "--json"]));
    assert_eq!(stats["live"], 0);
    assert_eq!(stats["queue"], "billing", "a write keeps the queue's name");
    let files = snapshot(&path);
    assert_eq!(
        (&files[1].1, &files[2].1),
        (&None, &None),
        "the writer closed the file: {files:?}"
    );

    // A dead letter that is not there: refused, exit 1.
    fails(
        &sqlite(&path, &["redrive", "--id", &raw]),
        1,
        "cannot redrive",
    );
    remove(&path);
}

/// `pause` and `resume` through the store: the flag is in the file, shown by `stats` and
/// `queues` (table and JSON), and the next owner finds the queue paused.
#[test]
fn pause_and_resume_are_kept_in_the_file() {
    let path = fixture("pause");
    let paused = json(&sqlite(&path, &["pause", "--json"]));
    assert_eq!(
        (&paused["paused"], &paused["changed"]),
        (&Value::from(true), &Value::from(true))
    );
    let again = stdout(&sqlite(&path, &["pause"]));
    assert!(
        again.contains("paused: the queue is paused (it already was)"),
        "{again}"
    );
    assert_eq!(json(&sqlite(&path, &["stats", "--json"]))["paused"], true);
    assert_eq!(
        json(&sqlite(&path, &["queues", "--json"]))[0]["paused"],
        true
    );
    let table = stdout(&sqlite(&path, &["stats"]));
    assert!(table.lines().next().unwrap().ends_with("paused"), "{table}");
    assert!(table.lines().nth(1).unwrap().ends_with("yes"), "{table}");

    // The next owner: paused, nothing leased, pushes accepted.
    let q = open(&path);
    assert!(q.stats().paused);
    assert!(q.try_receive().is_none());
    smol::block_on(q.push(b"while paused".to_vec())).unwrap();
    shut(q);

    let resumed = json(&sqlite(&path, &["resume", "--json"]));
    assert_eq!(
        (&resumed["paused"], &resumed["changed"]),
        (&Value::from(false), &Value::from(true))
    );
    let stats = json(&sqlite(&path, &["stats", "--json"]));
    assert_eq!(
        (&stats["paused"], &stats["ready"]),
        (&Value::from(false), &Value::from(2))
    );
    let q = open(&path);
    assert!(q.try_receive().is_some());
    shut(q);
    remove(&path);
}
