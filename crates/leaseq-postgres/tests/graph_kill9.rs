//! Jobs that wait for other jobs through SIGKILL (issue 33): worker processes (this test
//! binary re-executed, `graph_kill9_child`) run a 3-step chain and a fan-out of 1,000
//! children into one callback (`BatchOn::Success`) while the parent kills one of them with
//! SIGKILL at random seeded moments and starts another, `LEASEQ_GRAPH_ROUNDS` rounds (2 by
//! default; the seed from `LEASEQ_GRAPH_SEED`, else the clock, printed).
//!
//! Each worker appends what it does to a shared log (`leaseq_test_kit::graph_check`: a run
//! before the work, the callback's counts as it read them, an ack after it returned `Ok`);
//! the acks committed by a worker killed before its line are read back from the graph at
//! the end. The checker then says: every job completed, none started before its parents'
//! acks were committed, none released twice, and the callback read exact counts.

use leaseq_test_kit::graph_check::{check, parse, Counts, Event, Job};
use leaseq_test_kit::pg as common;
use leaseq_test_kit::rng::Rng;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leaseq_async::dependencies::{BatchOn, DependencyStore, StepState, WorkflowSpec};
use leaseq_async::Config;
use leaseq_postgres::{BytesCodec, Options, PgQueue};

const WORKERS: usize = 3;
const LOOPS: usize = 8;
const CHILDREN: u64 = 1_000;
/// Job numbers: the chain's steps, the callback, the children from `FIRST_CHILD`.
const CHAIN: [u64; 3] = [1, 2, 3];
const CALLBACK: u64 = 5;
const FIRST_CHILD: u64 = 10;

async fn open(url: &str, queue: &str) -> PgQueue<Vec<u8>> {
    let options = Options::new()
        .schema(common::SCHEMA.to_string())
        .heartbeat_every(Duration::from_millis(300))
        .rescue_every(Duration::from_millis(250));
    let schema = std::env::var("LEASEQ_GRAPH_KILL9_SCHEMA").ok();
    let options = match schema {
        Some(s) => options.schema(s),
        None => options,
    };
    let config = Config::new(Duration::from_secs(1)).with_max_attempts(1000);
    common::try_open::<Vec<u8>, _>(url, queue.to_string(), config, BytesCodec, options)
        .await
        .expect("open the queue")
}

fn job_of(payload: &[u8]) -> u64 {
    u64::from_le_bytes(payload[..8].try_into().expect("8 bytes"))
}

/// A worker: `LOOPS` receive loops logging each run, callback and ack, until stdin closes.
#[test]
fn graph_kill9_child() {
    let Some([url, queue, log]) =
        leaseq_test_kit::child::vars("LEASEQ_GRAPH_KILL9_", ["URL", "QUEUE", "LOG"])
    else {
        return;
    };
    common::runtime().block_on(async {
        let q = open(&url, &queue).await;
        let stop = Arc::new(AtomicBool::new(false));
        std::thread::spawn({
            let stop = stop.clone();
            move || {
                let _ = std::io::stdin().read_to_end(&mut Vec::new());
                stop.store(true, Ordering::SeqCst);
            }
        });
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .expect("the log");
        let file = Arc::new(std::sync::Mutex::new(file));
        let write = move |e: Event| {
            let line = e.line();
            file.lock()
                .unwrap()
                .write_all(line.as_bytes())
                .expect("log");
        };
        let mut loops = Vec::new();
        for _ in 0..LOOPS {
            let (q, stop, write) = (q.clone(), stop.clone(), write.clone());
            loops.push(tokio::spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    let Ok(d) = q.receive_timeout(Duration::from_millis(200)).await else {
                        continue;
                    };
                    let (job, message) = (job_of(d.item()), d.id().get());
                    write(Event::Run { job, message });
                    if job == CALLBACK {
                        let Ok(Some(parents)) = q.store().parent_outcomes(d.id()).await else {
                            continue; // the lease comes back
                        };
                        let counts = Counts::of(parents.iter().map(|p| p.state));
                        write(Event::Callback {
                            job,
                            message,
                            counts,
                        });
                    }
                    if d.ack().await.is_ok() {
                        write(Event::Acked { job, message });
                    }
                }
            }));
        }
        for l in loops {
            l.await.expect("a loop");
        }
    });
}

fn spawn(url: &str, queue: &str, log: &str) -> Child {
    Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "graph_kill9_child",
            "--test-threads=1",
            "--nocapture",
        ])
        .env("LEASEQ_GRAPH_KILL9_URL", url)
        .env("LEASEQ_GRAPH_KILL9_QUEUE", queue)
        .env("LEASEQ_GRAPH_KILL9_LOG", log)
        .env("LEASEQ_GRAPH_KILL9_SCHEMA", common::SCHEMA.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn a worker")
}

/// One round: the graph pushed, workers killed at random until it is done, then checked.
async fn round(url: &str, seed: u64, r: usize) {
    let queue = common::unique("graph-kill9");
    let log = std::env::temp_dir().join(format!("{queue}.log"));
    std::fs::write(&log, "").expect("the log");
    let log = log.to_string_lossy().to_string();
    let q = open(url, &queue).await;
    let g = q.store();
    let chain = WorkflowSpec::new()
        .step("1", 1_u64.to_le_bytes().to_vec(), &[])
        .step("2", 2_u64.to_le_bytes().to_vec(), &["1"])
        .step("3", 3_u64.to_le_bytes().to_vec(), &["2"]);
    let wf = g.push_workflow(chain).await.expect("the chain");
    let kids: Vec<Vec<u8>> = (0..CHILDREN)
        .map(|i| (FIRST_CHILD + i).to_le_bytes().to_vec())
        .collect();
    let batch = g
        .push_batch(kids, CALLBACK.to_le_bytes().to_vec(), BatchOn::Success)
        .await
        .expect("the batch");
    let mut jobs: BTreeMap<u64, Job> = BTreeMap::new();
    jobs.insert(1, Job::default());
    jobs.insert(
        2,
        Job {
            parents: vec![1],
            callback: None,
        },
    );
    jobs.insert(
        3,
        Job {
            parents: vec![2],
            callback: None,
        },
    );
    let children: Vec<u64> = (0..CHILDREN).map(|i| FIRST_CHILD + i).collect();
    for &c in &children {
        jobs.insert(c, Job::default());
    }
    let all = Counts {
        total: CHILDREN,
        acked: CHILDREN,
        ..Counts::default()
    };
    jobs.insert(
        CALLBACK,
        Job {
            parents: children,
            callback: Some(all),
        },
    );

    let mut rng = Rng(seed.wrapping_mul(1000).wrapping_add(r as u64));
    let mut workers: Vec<Child> = (0..WORKERS).map(|_| spawn(url, &queue, &log)).collect();
    let until = Instant::now() + Duration::from_secs(120);
    let mut kills = 0;
    let callback_done = loop {
        tokio::time::sleep(Duration::from_millis(100 + rng.below(700))).await;
        let steps = g
            .workflow_steps(wf)
            .await
            .expect("read")
            .expect("the chain");
        let counts = g
            .batch_counts(batch)
            .await
            .expect("read")
            .expect("the batch");
        let cb = {
            let events = parse(&std::fs::read_to_string(&log).expect("the log")).expect("parse");
            events
                .iter()
                .any(|e| matches!(e, Event::Acked { job: CALLBACK, .. }))
                // Or acked by a worker killed before its line: read from the graph.
                || callback_acked(g.as_ref(), &events).await.is_some()
        };
        let chain_done = matches!(steps[2].state, StepState::Acked(_));
        if chain_done && counts.acked == CHILDREN && cb {
            break true;
        }
        assert!(
            Instant::now() < until,
            "not done after 120 s: {steps:?} {counts:?}"
        );
        let w = rng.below(WORKERS as u64) as usize;
        workers[w].kill().expect("SIGKILL a worker");
        workers[w].wait().expect("reap");
        kills += 1;
        workers[w] = spawn(url, &queue, &log);
    };
    for mut w in workers {
        drop(w.stdin.take());
        common::wait_success(&mut w, "a worker", Instant::now() + Duration::from_secs(20)).await;
    }
    let mut events = parse(&std::fs::read_to_string(&log).expect("the log")).expect("parse");
    // Acks committed by a worker killed before it logged them: read from the graph.
    for (i, s) in g
        .workflow_steps(wf)
        .await
        .unwrap()
        .unwrap()
        .iter()
        .enumerate()
    {
        if let StepState::Acked(m) = s.state {
            events.push(Event::Acked {
                job: CHAIN[i],
                message: m.get(),
            });
        }
    }
    if let Some(message) = callback_acked(g.as_ref(), &events).await {
        if !events
            .iter()
            .any(|e| matches!(e, Event::Acked { job: CALLBACK, .. }))
        {
            events.push(Event::Acked {
                job: CALLBACK,
                message,
            });
        }
    }
    let cb_message = events.iter().find_map(|e| match e {
        Event::Run {
            job: CALLBACK,
            message,
        } => Some(*message),
        _ => None,
    });
    let parents = g
        .parent_outcomes(leaseq_async::MessageId::new(
            cb_message.expect("the callback ran"),
        ))
        .await
        .unwrap()
        .unwrap();
    for (i, p) in parents.iter().enumerate() {
        if let StepState::Acked(m) = p.state {
            events.push(Event::Acked {
                job: FIRST_CHILD + i as u64,
                message: m.get(),
            });
        }
    }
    let findings = check(&jobs, &events);
    assert!(
        findings.0.is_empty(),
        "round {r} (seed {seed}, {kills} kills):\n{findings}"
    );
    assert!(callback_done);
    eprintln!(
        "graph_kill9 round {r}: {kills} kills, {} events, checked",
        events.len()
    );
    let _ = std::fs::remove_file(&log);
}

#[test]
fn graph_kill9_chain_and_fanout_complete_once_each() {
    let Some(url) = common::server() else { return };
    let rounds: usize = std::env::var("LEASEQ_GRAPH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let seed: u64 = std::env::var("LEASEQ_GRAPH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("graph_kill9: {rounds} rounds, LEASEQ_GRAPH_SEED={seed}");
    common::runtime().block_on(async {
        for r in 0..rounds {
            round(&url, seed, r).await;
        }
    });
}

/// The callback's message if the graph says it was acked (a worker killed after its ack's
/// commit and before its line leaves no `Acked` in the log): a run of it logged, its job
/// read back.
async fn callback_acked<S: DependencyStore<Vec<u8>>>(g: &S, events: &[Event]) -> Option<u64> {
    for e in events {
        if let Event::Run {
            job: CALLBACK,
            message,
        } = e
        {
            let node = g
                .job_of(leaseq_async::MessageId::new(*message))
                .await
                .expect("read")?;
            if let Some(StepState::Acked(m)) = g.job_state(node).await.expect("read") {
                return Some(m.get());
            }
        }
    }
    None
}
