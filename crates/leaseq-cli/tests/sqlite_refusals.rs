//! The `leaseq` binary refusing: writes to a file another process owns (reads still
//! work), bad arguments (a clear message, exit 2), missing, foreign and other
//! applications' files (exit 1, nothing made or changed beside them).

mod common;

use common::{fixture, leaseq, open, shut, snapshot, sqlite};
use leaseq_test_kit::output::{fails, json};
use leaseq_test_kit::sqlite::{remove, temp};

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
