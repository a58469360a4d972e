//! The `leaseq` binary reading a real SQLite queue file: each read command's table and
//! JSON (stats, queues, peek, dead letters filtered and paged), and reads that change
//! nothing (the file and its WAL byte-identical, no owner lock taken), a crashed owner's
//! file included.

mod common;

use common::{fixture, open, snapshot, sqlite};
use leaseq_test_kit::output::{json, json_rows, stdout};
use leaseq_test_kit::sqlite::remove;
use serde_json::Value;

#[test]
fn read_commands_show_the_file_and_change_nothing() {
    let path = fixture("reads");
    let before = snapshot(&path);

    let stats = json(&sqlite(&path, &["stats", "--json"]));
    assert_eq!(
        (
            &stats["ready"],
            &stats["delayed"],
            &stats["in_flight"],
            &stats["dead"]
        ),
        (
            &Value::from(1),
            &Value::from(1),
            &Value::from(0),
            &Value::from(3)
        )
    );
    let table = stdout(&sqlite(&path, &["stats"]));
    assert!(table.contains("ready") && table.contains("dead"), "{table}");

    let queues = json(&sqlite(&path, &["queues", "--json"]));
    assert_eq!(queues.as_array().map(Vec::len), Some(1));
    assert_eq!(queues[0]["live"], 2);
    // The queue's name (its open recorded it), the file beside it.
    assert_eq!(queues[0]["queue"], "billing");
    assert_eq!(queues[0]["file"], path.to_str().unwrap());
    assert_eq!(stats["queue"], "billing");
    let table = stdout(&sqlite(&path, &["queues"]));
    assert!(
        table.lines().nth(1).unwrap().starts_with("billing "),
        "{table}"
    );

    let peek = json_rows(&sqlite(&path, &["peek", "--json"]));
    assert_eq!(peek.len(), 2);
    assert_eq!(peek[0]["state"], "ready");
    assert_eq!(peek[0]["payload"], "invoice 981");
    assert_eq!(peek[1]["state"], "delayed");
    assert!(peek[1]["visible_at_ms"].as_i64().is_some());
    let table = stdout(&sqlite(&path, &["peek"]));
    assert!(
        table.contains("\"invoice 981\"") && table.contains("delayed"),
        "{table}"
    );

    let dead = json_rows(&sqlite(&path, &["dead", "--json"]));
    assert_eq!(dead.len(), 3);
    assert_eq!(
        (&dead[0]["kind"], &dead[0]["reason"]),
        (&Value::from("email"), &Value::from("nacked"))
    );
    // A router job's args: its JSON itself, an object.
    assert_eq!(dead[0]["args"], serde_json::json!({"to": 17}));
    assert_eq!(dead[1]["args"], "hi", "args that are not JSON: their text");
    assert_eq!(dead[0]["last_error"], "upstream 503");
    assert_eq!(
        (&dead[1]["kind"], &dead[1]["reason"]),
        (&Value::from("sms"), &Value::from("rejected"))
    );
    assert_eq!(dead[2]["kind"], Value::Null);
    assert_eq!(dead[2]["payload_hex"], "deadbeef");
    let table = stdout(&sqlite(&path, &["dead"]));
    for cell in [
        "email",
        "sms",
        "rejected",
        "upstream 503",
        "0xdeadbeef",
        "  {\"to\":17}\n",
    ] {
        assert!(table.contains(cell), "{cell} not in {table}");
    }
    // What a bulk call with a filter would take.
    let emails = json(&sqlite(&path, &["dead", "--json", "--kind", "email"]));
    assert_eq!(emails.as_array().map(Vec::len), Some(1));
    assert_eq!(emails[0]["kind"], "email");
    let nacked = json(&sqlite(&path, &["dead", "--json", "--reason", "nacked"]));
    assert_eq!(
        nacked.as_array().map(Vec::len),
        Some(2),
        "the email and the raw bytes"
    );
    let none = json(&sqlite(
        &path,
        &["dead", "--json", "--reason", "rejected", "--kind", "email"],
    ));
    assert_eq!(none, Value::Array(Vec::new()));
    let sms = stdout(&sqlite(&path, &["dead", "--kind", "sms"]));
    assert!(
        sms.contains("no such number") && !sms.contains("upstream"),
        "{sms}"
    );
    // Paging.
    let first = dead[0]["id"].as_u64().unwrap().to_string();
    let page = json(&sqlite(
        &path,
        &["dead", "--json", "--limit", "1", "--after", &first],
    ));
    assert_eq!(page.as_array().map(Vec::len), Some(1));
    assert_eq!(page[0]["kind"], "sms");

    assert_eq!(
        snapshot(&path),
        before,
        "a read changed the file or its sidecars"
    );

    // A file from before opens recorded the queue's name: none shown, none made up.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("DELETE FROM meta WHERE key = 'queue_name'", [])
        .unwrap();
    let queues = json(&sqlite(&path, &["queues", "--json"]));
    assert_eq!(queues[0]["queue"], Value::Null);
    let table = stdout(&sqlite(&path, &["stats"]));
    assert!(table.lines().nth(1).unwrap().starts_with("- "), "{table}");
    remove(&path);
}

/// A file whose owner died holding a lease: its row still leased. Reads show the lease as
/// it is (no restart fix) and leave the file byte-identical; a write then opens the file
/// as its next owner would.
#[test]
fn a_crashed_owners_file_is_read_as_it_is() {
    let path = fixture("crashed");
    let q = open(&path);
    let d = smol::block_on(q.receive()).unwrap();
    assert_eq!(d.item(), b"invoice 981");
    leaseq_test_kit::sqlite::crash(q, d);
    let before = snapshot(&path);

    let stats = json(&sqlite(&path, &["stats", "--json"]));
    assert_eq!(
        (&stats["in_flight"], &stats["ready"]),
        (&Value::from(1), &Value::from(0))
    );
    let peek = json(&sqlite(&path, &["peek", "--json"]));
    assert_eq!(
        (&peek[0]["state"], &peek[0]["attempts"]),
        (&Value::from("in flight"), &Value::from(1))
    );
    stdout(&sqlite(&path, &["dead"]));
    assert_eq!(
        snapshot(&path),
        before,
        "a read changed the file or its WAL"
    );

    // A write opens it as its owner: the cut lease comes back, its attempt counted.
    assert_eq!(
        json(&sqlite(&path, &["redrive", "--all", "--json"]))["redriven"],
        3
    );
    let peek = json(&sqlite(&path, &["peek", "--json"]));
    let invoice = peek
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["payload"] == "invoice 981")
        .unwrap();
    assert_eq!(
        (&invoice["state"], &invoice["last_error"]),
        (&Value::from("ready"), &Value::from("process restart"))
    );
    remove(&path);
}
