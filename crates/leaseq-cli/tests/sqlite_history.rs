//! `leaseq sqlite <FILE> history`: the record of a queue file opened with
//! `Options::retention`, as a table and as JSON, all, filtered by kind and outcome, and
//! paged; a file without a record shows none; a bad outcome is a usage error. The read
//! changes nothing in the file.

mod common;

use std::time::Duration;

use common::{open_with as open, shut, sqlite};
use leaseq_sqlite::Options;
use leaseq_test_kit::envelope::envelope;
use leaseq_test_kit::output::{json, stdout};
use leaseq_test_kit::sqlite::{remove, temp};
use serde_json::Value;

#[test]
fn history_shows_the_record_filtered_and_paged() {
    let path = temp("cli-history");
    let q = open(&path, Options::new().retention(Duration::from_secs(3600)));
    smol::block_on(async {
        q.push(envelope("email", "{}")).await.unwrap();
        q.push(envelope("sms", "{}")).await.unwrap();
        q.push(envelope("email", "{}")).await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        q.receive().await.unwrap().nack("no route").await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
    });
    shut(q);

    let table = stdout(&sqlite(&path, &["history"]));
    assert!(table.starts_with("seq"), "{table}");
    for want in ["email", "sms", "acked", "dead", "no route"] {
        assert!(table.contains(want), "{want} in {table}");
    }
    let all: Value = json(&sqlite(&path, &["history", "--json"]));
    assert_eq!(all.as_array().unwrap().len(), 3);
    assert_eq!(all[1]["kind"], "sms");
    assert_eq!(all[1]["outcome"], "dead");
    assert_eq!(all[1]["reason"], "nacked");
    let email: Value = json(&sqlite(
        &path,
        &["history", "--kind", "email", "--outcome", "acked", "--json"],
    ));
    assert_eq!(email.as_array().unwrap().len(), 2);
    let first = all[0]["seq"].as_u64().unwrap().to_string();
    let page: Value = json(&sqlite(
        &path,
        &["history", "--after", &first, "--limit", "1", "--json"],
    ));
    assert_eq!(page.as_array().unwrap().len(), 1);
    assert_eq!(page[0]["seq"], all[1]["seq"]);

    let bad = sqlite(&path, &["history", "--outcome", "done"]);
    assert_eq!(bad.status.code(), Some(2));
    remove(&path);
}

#[test]
fn a_file_without_a_record_shows_none() {
    let path = temp("cli-history-off");
    let q = open(&path, Options::new());
    smol::block_on(async {
        q.push(b"x".to_vec()).await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
    });
    shut(q);
    let table = stdout(&sqlite(&path, &["history"]));
    assert_eq!(table, "no finished jobs recorded\n");
    remove(&path);
}
