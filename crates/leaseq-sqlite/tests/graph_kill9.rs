//! Jobs that wait for other jobs on SQLite through `kill -9` (issue 33): each round pushes
//! a 3-step chain (a workflow) and a batch of 1,000 children into one callback, then runs
//! child processes that work the queue and kills them with SIGKILL at seeded random
//! moments (`KILLS` times: once the log has grown by a random amount, in the middle of the
//! work, or as a dependent starts; then up to 3 ms later), then runs a last child to the
//! end; every seventh job is nacked once (a redelivery without a kill). The processes log
//! each run, each committed ack and what the callback read (the test kit's `graph_check`);
//! the check: every step completes; no dependent started before its last parent's ack was
//! committed; none released twice; the callback released once, with the exact counts.
//!
//! `LEASEQ_GRAPH_ROUNDS` rounds (2 by default, for CI; the goal is 50).

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leaseq_async::dependencies::{BatchOn, DependencyStore, NodeId, StepState, WorkflowSpec};
use leaseq_async::{Config, Failure};
use leaseq_sqlite::{BytesCodec, OpenError};
use leaseq_test_kit::graph_check::{self, Counts, Event, Job};
use leaseq_test_kit::rng::Rng;
use leaseq_test_kit::{child, sqlite::BytesQueue as Queue};

/// The chain's jobs.
const CHAIN: [u64; 3] = [0, 1, 2];
/// The batch's callback.
const CALLBACK: u64 = 999;
/// The batch's children: `FIRST..FIRST + CHILDREN`.
const FIRST: u64 = 1000;
const CHILDREN: u64 = 1000;
/// Kills per round (every other one as a dependent starts).
const KILLS: usize = 4;

fn config() -> Config {
    // Attempts enough for a lease cut by every kill: nothing is dead-lettered.
    Config::new(Duration::from_secs(30)).with_max_attempts(1000)
}

fn job(n: u64) -> Vec<u8> {
    n.to_be_bytes().to_vec()
}

fn job_of(item: &[u8]) -> u64 {
    u64::from_be_bytes(item[..8].try_into().expect("8 bytes"))
}

/// Opens `path`, waiting out the lock of a process just killed (released by the OS).
fn open(path: &Path) -> Queue {
    let start = Instant::now();
    loop {
        match leaseq_test_kit::sqlite::open_with(path, config(), BytesCodec, Default::default()) {
            Ok(q) => return q,
            Err(OpenError::Locked(_)) if start.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("open: {e}"),
        }
    }
}

/// The log: each line one `write` on an `O_APPEND` file.
#[derive(Clone)]
struct Log(Arc<Mutex<std::fs::File>>);

impl Log {
    fn open(path: &Path) -> Log {
        let f = OpenOptions::new().create(true).append(true).open(path);
        Log(Arc::new(Mutex::new(f.expect("open the log"))))
    }
    fn event(&self, e: Event) {
        let mut f = self.0.lock().unwrap();
        f.write_all(e.line().as_bytes()).expect("log");
    }
}

/// The child: works the queue (four workers) until killed, or, with `FINAL` set, until
/// nothing is left.
#[test]
fn graph_kill9_child() {
    let Some([path, log]) = child::vars("LEASEQ_GRAPH_KILL9_", ["FILE", "LOG"]) else {
        return;
    };
    let last = std::env::var("LEASEQ_GRAPH_KILL9_FINAL").is_ok();
    let log = Log::open(Path::new(&log));
    let q = open(Path::new(&path));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (q, log) = (q.clone(), log.clone());
            smol::spawn(async move {
                while let Some(d) = q.receive().await {
                    let (job, message) = (job_of(d.item()), d.id().get());
                    log.event(Event::Run { job, message });
                    if job == CALLBACK {
                        let read = q.store().parent_outcomes(d.id()).await.unwrap();
                        let parents = read.expect("the callback is a job of the graph");
                        let counts = Counts::of(parents.iter().map(|p| p.state));
                        log.event(Event::Callback {
                            job,
                            message,
                            counts,
                        });
                    }
                    if job % 7 == 1 && d.attempt() == 1 {
                        // A redelivery without a kill: the counts stay exact.
                        let again = Failure::error("flaky").retry_after(Duration::ZERO);
                        d.nack_with(again).await.expect("nack");
                        continue;
                    }
                    d.ack().await.expect("ack");
                    log.event(Event::Acked { job, message });
                }
            })
        })
        .collect();
    smol::block_on(async {
        if last {
            q.wait_empty().await;
            q.close().await.expect("close");
        }
        for w in workers {
            w.await;
        }
    });
}

/// The graph each round pushes, for the check.
fn jobs() -> BTreeMap<u64, Job> {
    let mut jobs = BTreeMap::new();
    jobs.insert(CHAIN[0], Job::default());
    for w in CHAIN.windows(2) {
        let parents = vec![w[0]];
        jobs.insert(
            w[1],
            Job {
                parents,
                callback: None,
            },
        );
    }
    let children: Vec<u64> = (FIRST..FIRST + CHILDREN).collect();
    for &c in &children {
        jobs.insert(c, Job::default());
    }
    let counts = Counts {
        total: CHILDREN,
        acked: CHILDREN,
        ..Counts::default()
    };
    let callback = Some(counts);
    jobs.insert(
        CALLBACK,
        Job {
            parents: children,
            callback,
        },
    );
    jobs
}

/// When a child is killed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kill {
    /// Once the log has grown by a random number of bytes (about 15 a line).
    Random,
    /// As a dependent (a chain's step, the callback) starts: the moment a release that
    /// overtook its parent's ack would be seen, the parent running again after the restart.
    AtRelease,
    /// Never: the last run, to the end.
    Last,
}

/// Runs a dependent (a chain step after the first, the callback) since the log began.
fn dependents_run(log: &Path) -> usize {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let starts = [CHAIN[1], CHAIN[2], CALLBACK].map(|j| format!("run {j} "));
    text.lines()
        .filter(|l| starts.iter().any(|s| l.starts_with(s.as_str())))
        .count()
}

/// Runs the child until it ends (`Last`) or until `kill` says, then a random moment
/// later (up to 3 ms), SIGKILL; whether it was killed while it still had work.
fn run_child(path: &Path, log: &Path, kill: Kill, rng: &mut Rng) -> bool {
    let mut env = vec![
        ("LEASEQ_GRAPH_KILL9_FILE", path.as_os_str().to_owned()),
        ("LEASEQ_GRAPH_KILL9_LOG", log.as_os_str().to_owned()),
        // Workers on four threads: a receiver runs while an ack is being made.
        ("SMOL_THREADS", "4".into()),
    ];
    if kill == Kill::Last {
        env.push(("LEASEQ_GRAPH_KILL9_FINAL", "1".into()));
    }
    let mut child = child::command("graph_kill9_child", &env)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn the child");
    if kill == Kill::Last {
        let start = Instant::now();
        while child.try_wait().unwrap().is_none() {
            let waited = start.elapsed();
            assert!(waited < Duration::from_secs(300), "the last child hangs");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(child.wait().unwrap().success(), "the last child failed");
        return false;
    }
    let size = || std::fs::metadata(log).map_or(0, |m| m.len());
    let (target, before) = (size() + 1 + rng.below(15_000), dependents_run(log));
    let due = || match kill {
        Kill::AtRelease => dependents_run(log) > before,
        _ => size() >= target,
    };
    let start = Instant::now();
    // (At most 10 s, and no longer than the child is busy: a log still for 300 ms.)
    let mut last = (size(), Instant::now());
    while !due() && start.elapsed() < Duration::from_secs(10) {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        let now = size();
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() > Duration::from_millis(300) && now > 0 {
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    std::thread::sleep(Duration::from_micros(rng.below(3000)));
    let working = child.try_wait().unwrap().is_none();
    child.kill().expect("SIGKILL the child");
    child.wait().unwrap();
    working
}

/// One round: pushes, kills, the last run; returns the log's events, with the acks the
/// file holds that no line recorded (a kill between the commit and the line).
fn round(dir: &Path, seed: u64, kills: &mut usize) -> Vec<Event> {
    let path = dir.join(format!("round-{seed}.db"));
    let log = PathBuf::from(format!("{}.log", path.display()));
    let q = open(&path);
    // The batch first: the chain runs after its children, each step taken as soon as it
    // is released (the moment a kill tests), as the callback is.
    let (wf, batch) = smol::block_on(async {
        let children = (FIRST..FIRST + CHILDREN).map(job).collect();
        let batch = q
            .store()
            .push_batch(children, job(CALLBACK), BatchOn::Complete)
            .await
            .unwrap();
        let spec = WorkflowSpec::new()
            .step("a", job(CHAIN[0]), &[])
            .step("b", job(CHAIN[1]), &["a"])
            .step("c", job(CHAIN[2]), &["b"]);
        (q.store().push_workflow(spec).await.unwrap(), batch)
    });
    leaseq_test_kit::sqlite::shut(q);
    let mut rng = Rng(seed);
    for k in 0..KILLS {
        let kill = if k % 2 == 1 {
            Kill::AtRelease
        } else {
            Kill::Random
        };
        *kills += usize::from(run_child(&path, &log, kill, &mut rng));
    }
    run_child(&path, &log, Kill::Last, &mut rng);

    let q = open(&path);
    let text = std::fs::read_to_string(&log).unwrap();
    let mut events = graph_check::parse(&text).unwrap();
    smol::block_on(async {
        let s = q.stats();
        assert_eq!((s.live(), s.dead), (0, 0), "round {seed}: all done");
        let steps = q.store().workflow_steps(wf).await.unwrap().unwrap();
        let counts = q.store().batch_counts(batch).await.unwrap().unwrap();
        assert_eq!((counts.acked, counts.open), (CHILDREN, 0), "round {seed}");
        // Every job acked in the file: the acks no line recorded, by message.
        let logged: BTreeMap<u64, u64> = events
            .iter()
            .filter_map(|e| match *e {
                Event::Run { job, message } => Some((message, job)),
                _ => None,
            })
            .collect();
        let nodes = steps.len() as u64 + CHILDREN + 1;
        for n in 0..nodes {
            let state = q.store().job_state(NodeId::new(n)).await.unwrap();
            let Some(StepState::Acked(m)) = state else {
                panic!("round {seed}: node {n} is {state:?}");
            };
            let job = logged[&m.get()];
            let acked = Event::Acked {
                job,
                message: m.get(),
            };
            if !events.contains(&acked) {
                events.push(acked);
            }
        }
    });
    leaseq_test_kit::sqlite::shut(q);
    for p in [&path, &log] {
        leaseq_test_kit::sqlite::remove(p);
    }
    events
}

#[test]
fn graph_kill9_every_step_once_and_in_order() {
    let rounds = child::count("LEASEQ_GRAPH_ROUNDS", 2);
    let dir = leaseq_test_kit::sqlite::temp("graph-kill9");
    std::fs::create_dir_all(&dir).unwrap();
    let jobs = jobs();
    let started = Instant::now();
    let (mut runs, mut lines, mut kills) = (0, 0, 0);
    for seed in 0..rounds {
        let events = round(&dir, seed, &mut kills);
        let findings = graph_check::check(&jobs, &events);
        assert!(findings.0.is_empty(), "round {seed}:\n{findings}");
        runs += events
            .iter()
            .filter(|e| matches!(e, Event::Run { .. }))
            .count();
        lines += events.len();
    }
    let _ = std::fs::remove_dir_all(&dir);
    let jobs_run = rounds * (CHILDREN + 4);
    println!(
        "graph kill -9: {rounds} rounds, {kills} of {} kills mid-work, {jobs_run} jobs, {runs} \
         runs logged ({} beyond one a job: nacked, or cut by a kill), {lines} events, {:.1?}",
        rounds as usize * KILLS,
        runs as u64 - jobs_run.min(runs as u64),
        started.elapsed()
    );
}
