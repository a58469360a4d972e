//! The kill -9 harness: a child process pushes, receives, acks, nacks, dead-letters and
//! hangs at random under load; the parent kills it with SIGKILL at random moments and
//! restarts it on the same file, `LEASEQ_KILLS` times (20 by default, for CI), then drains
//! the queue and checks, from the child's append-only log:
//! - every push that returned `Ok` was acked or dead-lettered (0 lost);
//! - an item whose ack returned `Ok` is never delivered again;
//! - every repeated delivery follows a nack, a hang (its lease ran out), or a crash that cut
//!   its previous lease;
//! - an item's attempt numbers only grow.
//!
//! The log: one line per fact, each written with a single `write` on an `O_APPEND` file
//! (no fsync: a SIGKILL does not lose what the kernel has). A line cut by the kill (no
//! trailing newline) is ignored. The parent writes a `K` line after each kill.

use leaseq_test_kit::rng::Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leaseq_async::{Config, Failure};
use leaseq_sqlite::BytesCodec;
use leaseq_test_kit::child;
use leaseq_test_kit::sqlite::BytesQueue as Queue;

const MAX_ATTEMPTS: u32 = 8;
const VISIBILITY: Duration = Duration::from_millis(150);

fn config() -> Config {
    Config::new(VISIBILITY).with_max_attempts(MAX_ATTEMPTS)
}

fn queue(path: &Path) -> Queue {
    leaseq_test_kit::sqlite::open(path, config(), BytesCodec)
}

/// The append-only log: each line one `write` call.
#[derive(Clone)]
struct Log(Arc<Mutex<std::fs::File>>);

impl Log {
    fn open(path: &Path) -> Log {
        let f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .expect("open the log");
        Log(Arc::new(Mutex::new(f)))
    }
    fn line(&self, s: String) {
        let mut f = self.0.lock().unwrap();
        f.write_all(format!("{s}\n").as_bytes()).expect("log");
        f.flush().expect("log");
    }
}

/// The child: runs until killed.
#[test]
fn kill9_child() {
    let Some([path, log, seed]) = child::vars("LEASEQ_KILL9_", ["CHILD", "LOG", "SEED"]) else {
        return;
    };
    let seed: u64 = seed.parse().unwrap();
    let log = Log::open(Path::new(&log));
    let q = queue(Path::new(&path));
    let mut tasks = Vec::new();
    for p in 0..2u64 {
        let (q, log) = (q.clone(), log.clone());
        tasks.push(smol::spawn(async move {
            let mut rng = Rng(seed * 100 + p);
            loop {
                // Load, not a backlog: the consumers keep up with it.
                while q.stats().live() > 200 {
                    smol::Timer::after(Duration::from_millis(2)).await;
                }
                for _ in 0..rng.below(20) + 1 {
                    let id = q.push(vec![0u8; 16]).await.expect("push");
                    log.line(format!("P {}", id.get()));
                }
                smol::Timer::after(Duration::from_millis(rng.below(4))).await;
            }
        }));
    }
    for c in 0..6u64 {
        let (q, log) = (q.clone(), log.clone());
        tasks.push(smol::spawn(async move {
            let mut rng = Rng(seed * 100 + 10 + c);
            while let Some(d) = q.receive().await {
                let id = d.id().get();
                log.line(format!("D {id} {}", d.attempt()));
                match rng.below(100) {
                    0..=64 => {
                        log.line(format!("a {id}"));
                        d.ack().await.expect("ack");
                        log.line(format!("A {id}"));
                    }
                    65..=84 => {
                        log.line(format!("N {id}"));
                        let _ = d
                            .nack_with(Failure::error("flaky").retry_after(Duration::ZERO))
                            .await;
                    }
                    85..=92 => {
                        // Hangs past its lease, then gives up (the drop is stale).
                        log.line(format!("H {id}"));
                        smol::Timer::after(VISIBILITY + Duration::from_millis(30)).await;
                        drop(d);
                    }
                    93..=95 => {
                        log.line(format!("X {id}"));
                        let _ = d.dead_letter("poison").await;
                    }
                    _ => {
                        smol::Timer::after(Duration::from_millis(rng.below(20))).await;
                        log.line(format!("a {id}"));
                        d.ack().await.expect("ack");
                        log.line(format!("A {id}"));
                    }
                }
            }
        }));
    }
    smol::block_on(async {
        for t in tasks {
            t.await;
        }
    });
}

/// What the log says, line by line.
#[derive(Default)]
struct Facts {
    pushed: BTreeSet<u64>,
    /// Per id: (line number, attempt) of each delivery.
    deliveries: BTreeMap<u64, Vec<(usize, u32)>>,
    /// Per id: line numbers of nacks, hangs, dead letters (a reason to deliver again).
    settled_again: BTreeMap<u64, Vec<usize>>,
    /// Per id: the line number of its confirmed ack.
    acked: BTreeMap<u64, usize>,
    ack_started: BTreeSet<u64>,
    kills: Vec<usize>,
    torn: usize,
}

fn read_log(path: &Path) -> Facts {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut facts = Facts::default();
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    if complete.len() < text.len() {
        facts.torn += 1;
    }
    for (n, line) in complete.lines().enumerate() {
        let mut parts = line.split(' ');
        let kind = parts.next().unwrap_or("");
        let id: u64 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        match kind {
            "P" => {
                facts.pushed.insert(id);
            }
            "D" => {
                let attempt: u32 = parts.next().unwrap().parse().unwrap();
                facts.deliveries.entry(id).or_default().push((n, attempt));
            }
            "N" | "H" | "X" => facts.settled_again.entry(id).or_default().push(n),
            "a" => {
                facts.ack_started.insert(id);
            }
            "A" => {
                facts.acked.insert(id, n);
            }
            "K" => facts.kills.push(n),
            // A line torn by an earlier kill and continued by the next run: ignored.
            _ => facts.torn += 1,
        }
    }
    facts
}

#[test]
fn kill9_loses_nothing() {
    let kills = child::count("LEASEQ_KILLS", 20) as usize;
    let dir = std::env::temp_dir();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let path = dir.join(format!("leaseq-kill9-{}-{stamp}.db", std::process::id()));
    let log_path = PathBuf::from(format!("{}.log", path.display()));
    let mut rng = Rng(stamp as u64);
    let started = Instant::now();
    for k in 0..kills {
        let env = [
            ("LEASEQ_KILL9_CHILD", path.clone().into_os_string()),
            ("LEASEQ_KILL9_LOG", log_path.clone().into_os_string()),
            ("LEASEQ_KILL9_SEED", k.to_string().into()),
        ];
        let mut child = child::command("kill9_child", &env)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100 + rng.below(400)));
        child.kill().expect("SIGKILL the child");
        let status = child.wait().unwrap();
        assert!(!status.success(), "the child ended by itself: {status:?}");
        Log::open(&log_path).line("K".into());
    }
    let crash_time = started.elapsed();

    // The last restart: drain what is left.
    let mut drained = BTreeMap::new();
    let q = queue(&path);
    let restored = q.stats();
    smol::block_on(async {
        // No short timeout: a receive timed out while its attempt was being committed
        // would hand the lease back and add a run this test did not make.
        loop {
            let s = q.stats();
            if s.ready + s.delayed + s.in_flight == 0 {
                break;
            }
            match q.receive_timeout(Duration::from_secs(60)).await {
                Ok(d) => {
                    drained.insert(d.id().get(), d.attempt());
                    d.ack().await.unwrap();
                }
                Err(e) => panic!("{} items live, none came in a minute: {e:?}", s.live()),
            }
        }
        q.store().sync().await.unwrap();
    });
    let dead = leaseq_test_kit::sqlite::dead_attempts(&q);
    let facts = read_log(&log_path);

    // 0 lost: every push that returned Ok was acked (confirmed, or begun and gone from the
    // file), drained, or dead-lettered.
    let lost: Vec<u64> = facts
        .pushed
        .iter()
        .copied()
        .filter(|id| {
            !(facts.acked.contains_key(id)
                || facts.ack_started.contains(id)
                || drained.contains_key(id)
                || dead.contains_key(id))
        })
        .collect();
    assert!(lost.is_empty(), "lost: {lost:?}");

    // An ack that returned Ok is final.
    for (id, at) in &facts.acked {
        let again = facts
            .deliveries
            .get(id)
            .map_or(0, |ds| ds.iter().filter(|(n, _)| n > at).count());
        assert_eq!(again, 0, "#{id} delivered after its ack returned");
        assert!(
            !drained.contains_key(id),
            "#{id} acked, then back at restart"
        );
        assert!(!dead.contains_key(id), "#{id} acked, then a dead letter");
    }

    // Attempts only grow; every repeated delivery is accounted for.
    let (mut by_nack, mut by_crash, mut jumps) = (0, 0, 0);
    let no_lines = Vec::new();
    for (id, ds) in &facts.deliveries {
        let again = facts.settled_again.get(id).unwrap_or(&no_lines);
        for w in ds.windows(2) {
            let ((n0, a0), (n1, a1)) = (w[0], w[1]);
            assert!(a1 > a0, "#{id}: attempt {a1} after {a0}");
            if a1 > a0 + 1 {
                jumps += 1; // a delivery committed but cut before it was logged
            }
            if again.iter().any(|n| (n0..n1).contains(n)) {
                by_nack += 1;
            } else if facts.kills.iter().any(|n| (n0..n1).contains(n)) {
                by_crash += 1;
            } else {
                panic!("#{id}: delivered again at line {n1} with no nack, hang or crash since line {n0}");
            }
        }
        if let Some(a) = drained.get(id) {
            assert!(*a > ds.last().unwrap().1, "#{id}: drained at attempt {a}");
        }
        if let Some(a) = dead.get(id) {
            assert!(*a >= ds.last().unwrap().1, "#{id}: dead at attempt {a}");
        }
    }
    let deliveries: usize = facts.deliveries.values().map(Vec::len).sum();
    println!(
        "kill -9 harness: {kills} kills in {crash_time:.1?}; {} pushes returned Ok, {deliveries} \
         deliveries logged, {} acks returned Ok, {} drained at the end (restored: {restored}), \
         {} dead letters; repeated deliveries: {by_nack} after a nack/hang/dead-letter, \
         {by_crash} after a crash; {jumps} attempt jumps (a delivery committed, cut before \
         logged); {} torn log lines; lost: 0",
        facts.pushed.len(),
        facts.acked.len(),
        drained.len(),
        dead.len(),
        facts.torn,
    );
    assert!(facts.pushed.len() > 100, "too little load");
    drop(q);
    for suffix in ["", "-wal", "-shm", "-lock"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let _ = std::fs::remove_file(&log_path);
}
