//! `leaseq ... workflows | workflow ID | batches | batch ID | cancel-workflow ID | retry-step
//! ID STEP` on a real SQLite file and on the machine's PostgreSQL server (skipped loudly
//! without one, failing then with `LEASEQ_PG_REQUIRED=1`): the same workflow and batch
//! ([`graph_fixture`]) read as a person reads them (each step's state, attempts and error,
//! the batch's counts), a failed step retried and the workflow cancelled through the CLI,
//! each change read back. A cancel without `--yes` is a usage error before anything is
//! opened. (The tables' layout is unit-tested in `src/workflows.rs`.)

mod common;

use std::process::Output;
use std::time::Duration;

use common::graph::graph_fixture;
use common::{fixture, open, postgres as pg, shut, snapshot, sqlite};
use leaseq_async::Config;
use leaseq_postgres::Options;
use leaseq_test_kit::output::{fails, json, json_rows, stdout};
use leaseq_test_kit::pg::{runtime, with_scratch_schema};
use leaseq_test_kit::sqlite::{remove, temp};
use serde_json::{json, Value};

/// Each step of `workflow` (JSON) as (name, status, attempts, last error).
fn steps(workflow: &Value) -> Vec<(String, String, Value, Value)> {
    workflow["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["status"].as_str().unwrap().to_string(),
                s["attempts"].clone(),
                s["last_error"].clone(),
            )
        })
        .collect()
}

fn step(name: &str, status: &str, attempts: Value, error: Value) -> (String, String, Value, Value) {
    (name.into(), status.into(), attempts, error)
}

/// The CLI's workflow and batch commands through `cli(command, args after the queue)` on a
/// queue holding [`graph_fixture`]'s workflow `wf` and batch `batch`.
fn reads_and_acts(cli: &dyn Fn(&str, &[&str]) -> Output, wf: u64, batch: u64) {
    let (wf_s, batch_s) = (wf.to_string(), batch.to_string());
    let all = json_rows(&cli("workflows", &["--json"]));
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0]["id"], wf);
    assert_eq!(all[0]["status"], "failed");
    assert_eq!(
        steps(&all[0]),
        [
            step("resize", "done", Value::Null, Value::Null),
            step("upload", "dead-lettered", json!(1), json!("s3 down")),
            step("notify", "cancelled", Value::Null, Value::Null),
        ]
    );
    let table = stdout(&cli("workflows", &[]));
    assert!(
        table.contains("failed") && table.contains("upload: dead-lettered"),
        "{table}"
    );
    let table = stdout(&cli("workflow", &[&wf_s]));
    assert!(table.contains("s3 down"), "{table}");

    let batches = json_rows(&cli("batches", &["--json"]));
    assert_eq!(batches.len(), 1, "{batches:?}");
    let b = &batches[0];
    assert_eq!(b["id"], batch);
    assert_eq!(b["on"], "on complete");
    let counts = ["total", "open", "acked", "dead_lettered", "cancelled"].map(|k| b[k].clone());
    assert_eq!(counts, [3, 0, 2, 1, 0].map(|n| json!(n)));
    assert_eq!(b["callback"]["status"], "done", "the callback ran once");
    assert_eq!(json(&cli("batch", &[&batch_s, "--json"])), *b);
    fails(&cli("batch", &["999"]), 1, "no batch has this id");
    fails(&cli("workflow", &["999"]), 1, "no workflow has this id");

    // The failed step retried: redriven, and the step its failure cancelled waits again.
    let said = stdout(&cli("retry-step", &[&wf_s, "upload"]));
    assert!(said.contains("runs again"), "{said}");
    let now = json(&cli("workflow", &[&wf_s, "--json"]));
    assert_eq!(now["status"], "running");
    let s = steps(&now);
    assert_eq!(s[1].1, "ready");
    assert_eq!(s[2].1, "waiting");
    fails(
        &cli("retry-step", &[&wf_s, "resize"]),
        1,
        "retry step \"resize\"",
    );

    // Cancelled: the queued step and the waiting one.
    let said = stdout(&cli("cancel-workflow", &[&wf_s, "--yes"]));
    assert_eq!(said, format!("cancelled: 2 steps of workflow {wf}\n"));
    let now = json(&cli("workflow", &[&wf_s, "--json"]));
    assert_eq!(now["status"], "cancelled");
    let s: Vec<String> = steps(&now).into_iter().map(|s| s.1).collect();
    assert_eq!(s, ["done", "cancelled", "cancelled"]);
    fails(
        &cli("cancel-workflow", &[&wf_s]),
        2,
        "cancel-workflow cancels every step left: add --yes",
    );
}

#[test]
fn a_sqlite_file_shows_and_acts_on_its_workflows_and_batches() {
    let path = temp("cli-graph");
    let q = open(&path);
    let (wf, batch) = smol::block_on(graph_fixture(&q));
    shut(q);
    let cli = |command: &str, args: &[&str]| sqlite(&path, &[&[command][..], args].concat());
    reads_and_acts(&cli, wf.get(), batch.get());
    remove(&path);
}

#[test]
fn a_sqlite_file_a_service_owns_refuses_workflow_calls() {
    let path = fixture("cli-graph-owned");
    let q = open(&path);
    let before = snapshot(&path);
    for args in [
        &["workflows"][..],
        &["batch", "1"],
        &["retry-step", "0", "upload"],
        &["cancel-workflow", "0", "--yes"],
    ] {
        let out = sqlite(&path, args);
        fails(&out, 1, "in use by another process");
        assert!(out.stdout.is_empty(), "{args:?} printed nothing");
    }
    assert_eq!(snapshot(&path), before, "the owner's file untouched");
    shut(q);
    remove(&path);
}

#[test]
fn postgres_shows_and_acts_on_workflows_and_batches() {
    with_scratch_schema("cli_graph", |url, schema| {
        let (wf, batch) = runtime().block_on(async {
            let config = Config::new(Duration::from_secs(30)).with_max_attempts(1);
            let options = Options::new().schema(schema).pool_size(2);
            let q = leaseq_test_kit::pg::open_bytes(url, "media", config, options).await;
            let ids = graph_fixture(&q).await;
            q.close().await.unwrap();
            ids
        });
        let cli = |command: &str, args: &[&str]| {
            pg(url, schema, &[&[command, "media"][..], args].concat())
        };
        reads_and_acts(&cli, wf.get(), batch.get());
        fails(
            &pg(url, schema, &["workflows", "nope"]),
            1,
            "no queue \"nope\"",
        );
    });
}
