//! Flow control across OS processes (issue 32): three processes (the test binary re-run,
//! `flow_child`), each with a `Pool` of 8, on one queue. Every handler writes a ledger row
//! in the database when it starts and when it finishes (the database's clock, before its
//! ack), and the parent checks the ledger:
//! - a queue limit of 5, a kind's of 2 and a partition's of 1: never more at once;
//! - a rate of 100/s (burst 10) over 20 s: the starts (the leases' `leased_at`, from the
//!   record of finished jobs) never pass the GCRA's bound; the rate achieved is printed;
//! - a queue limit alone (claimed through its slots) changed while they claim: at no
//!   lease's start more leases in flight than the limit then;
//! - ordered groups with a `kill -9` of the process running one of their items: each
//!   group's items run one at a time in push order, the killed one again before its next.

#[path = "flow_procs/ledger.rs"]
mod ledger;

use leaseq_test_kit::child;
use leaseq_test_kit::pg as common;

use std::num::NonZeroU32;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leaseq_async::{Config, Push};
use leaseq_core::{FlowKey, LimitScope, Rate};
use leaseq_postgres::{BytesCodec, PgQueue};

use ledger::{Entry, Ledger};

const CHILDREN: usize = 3;
const WORKERS: usize = 8;

fn config() -> Config {
    Config::new(Duration::from_secs(6))
}

fn options(schema: &str) -> leaseq_postgres::Options {
    common::options()
        .schema(schema.to_string())
        .heartbeat_every(Duration::from_millis(400))
        .rescue_every(Duration::from_millis(100))
        .poll_interval(Duration::from_millis(100))
        .retention(Duration::from_secs(3600))
}

/// An item's payload: `kind|partition|group|index` (empty: none).
fn payload(kind: &str, part: &str, group: &str, index: u32) -> Vec<u8> {
    format!("{kind}|{part}|{group}|{index}").into_bytes()
}

/// A child: a pool of 8 on the queue; each handler records its start, sleeps `SLEEP_MS`
/// (the `KILL_AT`-th start of this process marks its run hung in the ledger and hangs:
/// the parent kills the process), records its finish and acks; ends once `TOTAL` items have finished.
#[test]
fn flow_child() {
    let Some([url, schema, queue, table, total, sleep_ms, kill_at]) = child::vars(
        "LEASEQ_FLOW_",
        [
            "URL", "SCHEMA", "QUEUE", "TABLE", "TOTAL", "SLEEP_MS", "KILL_AT",
        ],
    ) else {
        return;
    };
    let total: i64 = total.parse().expect("total");
    let sleep = Duration::from_millis(sleep_ms.parse().expect("sleep"));
    let kill_at: u64 = kill_at.parse().expect("kill_at");
    common::runtime().block_on(async {
        let q: PgQueue<Vec<u8>> =
            common::open(&url, queue, config(), BytesCodec, options(&schema)).await;
        let ledger = Arc::new(Ledger::connect(&url, &table).await);
        let starts = Arc::new(AtomicU64::new(0));
        let pool = leaseq_tokio::Pool::builder(q.clone())
            .workers(WORKERS)
            .spawn({
                let ledger = ledger.clone();
                move |job: leaseq_async::Job<Vec<u8>>| {
                    let (ledger, starts) = (ledger.clone(), starts.clone());
                    async move {
                        let (id, attempt) = (job.id.get() as i64, job.attempt as i32);
                        ledger.start(id, attempt, &job.item).await;
                        if starts.fetch_add(1, Ordering::SeqCst) + 1 == kill_at {
                            ledger.hang(id, attempt).await;
                            tokio::time::sleep(Duration::from_secs(600)).await;
                        }
                        tokio::time::sleep(sleep).await;
                        ledger.finish(id, attempt).await;
                        Ok(())
                    }
                }
            });
        while ledger.finished().await < total {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        pool.shutdown(Duration::from_secs(5)).await;
    });
}

/// Runs `CHILDREN` children on `queue` until `total` items finished (one killed at its
/// `kill_at`-th start and replaced, if not 0), and reads the ledger.
async fn run_children(
    url: &str,
    queue: &str,
    table: &str,
    total: usize,
    sleep_ms: u64,
    kill_at: u64,
) -> (Vec<Entry>, Option<i64>) {
    let env = |kill: u64| {
        [
            ("LEASEQ_FLOW_URL", url.to_string()),
            ("LEASEQ_FLOW_SCHEMA", common::SCHEMA.name().to_string()),
            ("LEASEQ_FLOW_QUEUE", queue.to_string()),
            ("LEASEQ_FLOW_TABLE", table.to_string()),
            ("LEASEQ_FLOW_TOTAL", total.to_string()),
            ("LEASEQ_FLOW_SLEEP_MS", sleep_ms.to_string()),
            ("LEASEQ_FLOW_KILL_AT", kill.to_string()),
        ]
    };
    let mut children: Vec<_> = (0..CHILDREN)
        .map(|i| {
            let kill = if i == 0 { kill_at } else { 0 };
            child::command("flow_child", &env(kill))
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn a child")
        })
        .collect();
    let mut killed_at = None;
    if kill_at > 0 {
        let ledger = Ledger::connect(url, table).await;
        let give_up = Instant::now() + Duration::from_secs(120);
        while !ledger.hung().await {
            assert!(Instant::now() < give_up, "no run hung for the kill");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        children[0].kill().expect("SIGKILL");
        children[0].wait().expect("reaped");
        // Read once the process is gone: every finish it recorded is before this.
        killed_at = Some(ledger::db_now(url).await);
        eprintln!("flow_procs: killed child 0 mid-job");
        children[0] = child::command("flow_child", &env(0))
            .stdout(Stdio::null())
            .spawn()
            .expect("respawn");
    }
    let until = Instant::now() + Duration::from_secs(180);
    for (i, c) in children.iter_mut().enumerate() {
        common::wait_success(c, &format!("child {i}"), until).await;
    }
    (Ledger::connect(url, table).await.entries().await, killed_at)
}

/// Opens the parent's handle on a fresh queue and its ledger table.
async fn setup(url: &str, prefix: &str) -> (String, String, PgQueue<Vec<u8>>) {
    let queue = common::unique(prefix);
    let q = common::open(
        url,
        queue.clone(),
        config(),
        BytesCodec,
        options(common::SCHEMA.name()),
    )
    .await;
    let table = format!("{}.\"ledger-{queue}\"", common::SCHEMA);
    Ledger::create(url, &table).await;
    (queue, table, q)
}

#[test]
fn three_processes_never_pass_a_queue_kind_or_partition_limit() {
    let Some(url) = common::server() else { return };
    common::runtime().block_on(async {
        let (queue, table, q) = setup(&url, "flowlim").await;
        q.set_limit(LimitScope::Queue, Some(5))
            .await
            .expect("limit");
        let kind_a = LimitScope::Kind(FlowKey::named("a"));
        let part_p = LimitScope::Partition(FlowKey::named("p"));
        q.set_limit(kind_a, Some(2)).await.expect("kind limit");
        q.set_limit(part_p, Some(1)).await.expect("partition limit");
        let settings = q.flow_settings().await.expect("settings");
        assert_eq!(settings.limit(LimitScope::Queue), Some(5));
        assert_eq!(settings.limit(kind_a), Some(2));
        let total = 240;
        for i in 0..total {
            let kind = ["a", "b"][i % 2];
            let part = ["p", "r", "s"][i % 3];
            let push = Push::new().kind(kind).partition(part);
            q.push_with(payload(kind, part, "", i as u32), push)
                .await
                .expect("push");
        }
        let (entries, killed_at) = run_children(&url, &queue, &table, total, 15, 0).await;
        ledger::each_once(&entries, total, killed_at);
        let most = ledger::most_at_once(&entries, |_| true);
        let most_a = ledger::most_at_once(&entries, |e| e.kind == "a");
        let most_p = ledger::most_at_once(&entries, |e| e.part == "p");
        eprintln!(
            "flow_procs: at once at most {most} (queue), {most_a} (kind a), {most_p} (partition p)"
        );
        assert!(most <= 5, "{most} at once over the queue's limit of 5");
        assert!(
            most_a <= 2,
            "{most_a} of kind a at once over its limit of 2"
        );
        assert!(
            most_p <= 1,
            "{most_p} of partition p at once over its limit of 1"
        );
        assert!(
            most >= 2,
            "the workers ran one at a time: the ledger saw no overlap"
        );
    });
}

/// A queue limit alone claims through its slots, without a lock across processes
/// (`flow_slots_sql.rs`); changed four times while three processes claim, and every lease
/// taken obeys the limit in force: at each lease's start (the record of finished jobs),
/// the leases in flight (taken, not yet settled) never pass it (either one while a change
/// commits).
#[test]
fn three_processes_keep_a_queue_limit_changed_while_they_claim() {
    let Some(url) = common::server() else { return };
    common::runtime().block_on(async {
        let (queue, table, q) = setup(&url, "flowslots").await;
        q.set_limit(LimitScope::Queue, Some(4))
            .await
            .expect("limit");
        let total = 600;
        let batch: Vec<Vec<u8>> = (0..total).map(|i| payload("", "", "", i)).collect();
        for chunk in batch.chunks(300) {
            q.push_batch(chunk.to_vec()).await.expect("push");
        }
        // Each change: from, to (the database's clock around it), the limit from then on.
        let changes = async {
            let ledger = Ledger::connect(&url, &table).await;
            let mut out = vec![(i64::MIN, i64::MIN, 4usize)];
            for (at, max) in [(100, 2), (250, 7), (400, 1), (480, 5)] {
                while ledger.finished().await < at {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                let from = ledger::db_now(&url).await;
                q.set_limit(LimitScope::Queue, Some(max as u32))
                    .await
                    .expect("a change");
                out.push((from, ledger::db_now(&url).await, max));
            }
            out
        };
        let ((entries, killed_at), changes) = tokio::join!(
            run_children(&url, &queue, &table, total as usize, 5, 0),
            changes
        );
        ledger::each_once(&entries, total as usize, killed_at);
        let spans = ledger::lease_spans(&url, &queue).await;
        assert_eq!(spans.len(), total as usize, "every lease recorded");
        let limit_at = |t: i64| {
            let mut limit = 0;
            for &(from, to, max) in &changes {
                if t >= to {
                    limit = max;
                } else if t >= from {
                    limit = limit.max(max);
                }
            }
            limit
        };
        if let Some((start, in_flight, limit)) = ledger::over_limit(&spans, limit_at) {
            panic!("{in_flight} leases in flight at {start}, over the limit of {limit}");
        }
        let most = ledger::most_at_once(&entries, |_| true);
        assert!(most >= 2, "the workers ran one at a time: no overlap seen");
        let slots: i64 = common::sql(&url)
            .await
            .query_one(
                &format!(
                    "SELECT count(*) FROM {}.flow_slots WHERE queue = $1",
                    common::SCHEMA
                ),
                &[&queue],
            )
            .await
            .expect("slots")
            .get(0);
        assert_eq!(
            slots, 5,
            "the last limit's slots, which the last claims took"
        );
    });
}

#[test]
fn three_processes_keep_a_rate_of_100_per_second_within_the_gcra_bound() {
    let Some(url) = common::server() else { return };
    common::runtime().block_on(async {
        let (queue, table, q) = setup(&url, "flowrate").await;
        let burst = 10;
        let rate = Rate::per_second(NonZeroU32::new(100).unwrap())
            .burst(NonZeroU32::new(burst).unwrap());
        q.set_rate(LimitScope::Queue, Some(rate)).await.expect("rate");
        let total = 2000;
        let batch: Vec<Vec<u8>> = (0..total).map(|i| payload("", "", "", i)).collect();
        for chunk in batch.chunks(500) {
            q.push_batch(chunk.to_vec()).await.expect("push");
        }
        let (entries, killed_at) = run_children(&url, &queue, &table, total as usize, 1, 0).await;
        ledger::each_once(&entries, total as usize, killed_at);
        let starts = ledger::lease_starts(&url, &queue).await;
        assert_eq!(starts.len(), total as usize, "every lease recorded");
        // Any k starts span at least (k - burst) intervals of 10 ms.
        let interval = 10_000i64;
        let b = i64::from(burst);
        for i in 0..starts.len() {
            for j in (i + b as usize)..starts.len().min(i + b as usize + 200) {
                let k = (j - i + 1) as i64;
                let span = starts[j] - starts[i];
                assert!(
                    span >= (k - b) * interval,
                    "{k} starts within {span} us: over the bound of a rate of 100/s, burst {b}"
                );
            }
        }
        let secs = (starts[starts.len() - 1] - starts[0]) as f64 / 1e6;
        eprintln!(
            "flow_procs: rate 100/s (burst {b}) across {CHILDREN} processes: {} starts in {secs:.2} s, {:.1}/s after the burst",
            starts.len(),
            (starts.len() as f64 - b as f64) / secs
        );
    });
}

#[test]
fn ordered_groups_run_in_push_order_through_a_kill_9() {
    let Some(url) = common::server() else { return };
    common::runtime().block_on(async {
        let (queue, table, q) = setup(&url, "flowgrp").await;
        let (groups, per) = (12u32, 10u32);
        let mut batch = Vec::new();
        for i in 0..per {
            for g in 0..groups {
                batch.push((format!("g{g}"), i));
            }
        }
        for (g, i) in &batch {
            let push = Push::new().group(g);
            q.push_with(payload("", "", g, *i), push)
                .await
                .expect("push");
        }
        let total = (groups * per) as usize;
        let (entries, killed_at) = run_children(&url, &queue, &table, total, 10, 5).await;
        ledger::each_once(&entries, total, killed_at);
        let killed = entries.iter().filter(|e| e.finished.is_none()).count();
        // The hung run and whatever else the killed process was running then.
        assert!(killed >= 1, "a run was killed mid-job");
        ledger::groups_in_order(&entries, groups as usize, per, killed_at);
    });
}
