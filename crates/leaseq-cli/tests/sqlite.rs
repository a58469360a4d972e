//! The `leaseq` binary on a real SQLite queue file: each command's table and JSON, writes
//! through the store (and refused while another process owns the file), bad arguments
//! (a clear message, exit 2 or 1), and reads that change nothing (the file and its WAL
//! byte-identical, no owner lock taken).

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use leaseq_async::{Config, LeaseQueue};
use leaseq_smol::SmolRuntime;
use leaseq_sqlite::{BytesCodec, Sqlite, SqliteQueue};
use leaseq_test_kit::output::{self, fails, json, stdout};
use leaseq_test_kit::sqlite::{remove, temp};
use leaseq_test_kit::steps::cli_fixture;
use serde_json::Value;

type Queue = SqliteQueue<Vec<u8>, SmolRuntime, BytesCodec>;

/// Closes `q` and waits until its store is gone (the driver task lets go of it on its own
/// thread), so that the file is unlocked and its writer's connection closed on return.
fn shut(q: Queue) {
    smol::block_on(async { q.close().await }).unwrap();
    let store = q.store().clone();
    drop(q);
    while std::sync::Arc::strong_count(&store) > 1 {
        std::thread::yield_now();
    }
    drop(store);
}

fn open(path: &Path) -> Queue {
    smol::block_on(
        LeaseQueue::builder(Config::new(Duration::from_secs(30)).with_max_attempts(1))
            .runtime(SmolRuntime::global())
            .name("billing")
            .codec(BytesCodec)
            .open(Sqlite::file(path)),
    )
    .unwrap()
}

/// A file with a ready item, a delayed one, and three dead letters: an email nacked out of
/// its attempts, an sms rejected by its handler, raw binary bytes nacked.
fn fixture(name: &str) -> PathBuf {
    let path = temp(name);
    let q = open(&path);
    smol::block_on(async {
        cli_fixture(&q).await;
    });
    shut(q);
    path
}

fn leaseq(args: &[&str]) -> Output {
    output::run(env!("CARGO_BIN_EXE_leaseq"), args)
}

fn sqlite(path: &Path, args: &[&str]) -> Output {
    let file = path.to_str().unwrap();
    leaseq(&[&["sqlite", file][..], args].concat())
}

/// The file, its WAL, shared memory and owner lock: whether each exists, its length and
/// a hash of its bytes.
fn snapshot(path: &Path) -> Vec<(String, Option<(usize, u64)>)> {
    use std::hash::{Hash, Hasher};
    ["", "-wal", "-shm", "-lock"]
        .iter()
        .map(|s| {
            let p = format!("{}{s}", path.display());
            let seen = std::fs::read(&p).ok().map(|bytes| {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                bytes.hash(&mut h);
                (bytes.len(), h.finish())
            });
            (s.to_string(), seen)
        })
        .collect()
}

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

    let peek = json(&sqlite(&path, &["peek", "--json"]));
    let peek = peek.as_array().unwrap();
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

    let dead = json(&sqlite(&path, &["dead", "--json"]));
    let dead = dead.as_array().unwrap();
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
    std::mem::forget(d);
    q.store().halt();
    std::mem::forget(q);
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

#[test]
fn a_file_owned_by_a_live_process_is_read_but_not_written() {
    let path = fixture("owned");
    let q = open(&path);
    let stats = json(&sqlite(&path, &["stats", "--json"]));
    assert_eq!(stats["dead"], 3, "reads work while it runs");
    fails(
        &sqlite(&path, &["redrive", "--all"]),
        1,
        "in use by another process: stop it",
    );
    fails(
        &sqlite(&path, &["purge-dead", "--yes"]),
        1,
        "in use by another process",
    );
    assert_eq!(q.stats().dead, 3, "nothing changed");
    shut(q);
    remove(&path);
}

#[test]
fn bad_arguments_and_bad_files_say_what_is_wrong() {
    let path = fixture("bad");
    let before = snapshot(&path);
    fails(&sqlite(&path, &["redrive"]), 2, "--id");
    fails(
        &sqlite(&path, &["redrive", "--id", "1", "--reason", "nacked"]),
        2,
        "cannot be used with",
    );
    fails(
        &sqlite(&path, &["redrive", "--all", "--reason", "bored"]),
        2,
        "unknown reason \"bored\"",
    );
    fails(&sqlite(&path, &["purge"]), 2, "add --yes");
    fails(
        &sqlite(&path, &["purge-dead", "--kind", "email"]),
        2,
        "add --yes",
    );
    fails(
        &sqlite(&path, &["peek", "--limit", "many"]),
        2,
        "invalid value",
    );
    fails(
        &sqlite(&path, &["frobnicate"]),
        2,
        "unexpected argument 'frobnicate'",
    );
    fails(&leaseq(&[]), 2, "Usage");
    assert_eq!(snapshot(&path), before, "refused commands changed nothing");

    let missing = temp("missing");
    for command in [&["stats"][..], &["queues"], &["peek"], &["dead", "--json"]] {
        fails(&sqlite(&missing, command), 1, "there is no queue file");
    }
    fails(
        &sqlite(&missing, &["redrive", "--all"]),
        1,
        "there is no queue file",
    );
    assert!(!missing.exists(), "no file made");

    let foreign = temp("foreign");
    std::fs::write(&foreign, b"not a database at all, just text").unwrap();
    fails(&sqlite(&foreign, &["dead"]), 1, "not a SQLite database");
    fails(
        &sqlite(&foreign, &["purge", "--yes"]),
        1,
        "not a SQLite database",
    );
    assert_eq!(
        std::fs::read(&foreign).unwrap(),
        b"not a database at all, just text"
    );
    remove(&foreign);

    // Another application's WAL-mode database: refused by reads and writes, its directory
    // left as it was (no `-wal`, `-shm` or `-lock` beside it, the file byte-identical).
    let app = temp("app-wal");
    {
        let conn = rusqlite::Connection::open(&app).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1);",
        )
        .unwrap();
    }
    let before = snapshot(&app);
    assert_eq!(
        before.iter().filter(|(_, f)| f.is_some()).count(),
        1,
        "closed cleanly: the database alone {before:?}"
    );
    for command in [&["stats"][..], &["dead"], &["redrive", "--all"]] {
        fails(&sqlite(&app, command), 1, "not a leaseq queue");
    }
    assert_eq!(snapshot(&app), before, "a refused command left a file");
    remove(&app);
    remove(&path);
}
