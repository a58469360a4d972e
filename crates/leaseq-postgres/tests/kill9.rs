//! The multi-process kill -9 test: 4 worker processes and a producer process on one queue;
//! the parent kills a random worker with SIGKILL mid-run and restarts it, `LEASEQ_KILLS`
//! times (5 by default), then checks from what the processes recorded in the database:
//! 0 items lost, every duplicate run matched by a counted lease loss (a nack, a deliberate
//! hang, a refused ack, or a kill of the worker that ran it), attempt numbers that only grow
//! and never pass the limit, and dead letters with the reason and error their last run
//! explains. It also measures how long after a kill the killed worker's items run again.
//!
//! The test binary re-executes itself (`kill9_child`, `LEASEQ_KILL9_ROLE` = `producer` or
//! `worker`). Everything is recorded in a schema of the test's own (`kill9_<pid>_<nanos>`,
//! dropped when the test passes), with the database's clock:
//! - `pushed`: each id whose `push().await` returned `Ok` (after it returned);
//! - `runs`: each delivery a worker got (id, attempt, pid), committed before any work;
//! - `outcomes`: how a run ended: `ack` (inserted in the same transaction as the ack, by
//!   `PgStore::ack_in`, so it exists iff the ack committed), `stale` (that ack was refused),
//!   `nack`, `term` (dead-lettered), `hang` (left to run out), each before the settle;
//! - `kills`: each SIGKILL the parent sent (pid, after the kill).

#[path = "kill9/check.rs"]
mod check;
use leaseq_test_kit::child;
use leaseq_test_kit::pg as common;
use leaseq_test_kit::rng::Rng;

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leaseq_async::{Config, Failure};
use leaseq_postgres::{BytesCodec, Options, PgDelivery, PgQueue};
use tokio::sync::Mutex;
use tokio_postgres::{Client, NoTls};

/// The queue's visibility: short, so that a killed worker's leases come back fast.
const VISIBILITY: Duration = Duration::from_secs(1);
const HEARTBEAT: Duration = Duration::from_millis(300);
const RESCUE: Duration = Duration::from_millis(250);
const MAX_ATTEMPTS: u32 = 4;
const WORKERS: usize = 4;
/// Receive loops per worker process, and the connections they share for their records.
const LOOPS: usize = 16;
const RECORD_CONNS: usize = 3;
/// The schema of the queue's tables: the parent's test schema (`common::SCHEMA`), which
/// the children are told in `LEASEQ_KILL9_QUEUE_SCHEMA`.
const QUEUE_SCHEMA: QueueSchema = QueueSchema;

/// The type of [`QUEUE_SCHEMA`], written `{QUEUE_SCHEMA}` in SQL.
#[derive(Clone, Copy)]
struct QueueSchema;

impl std::fmt::Display for QueueSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match std::env::var("LEASEQ_KILL9_QUEUE_SCHEMA") {
            Ok(name) => f.write_str(&name),
            Err(_) => f.write_str(common::SCHEMA.name()),
        }
    }
}

/// What an item is, its first byte: acked after some work (one in ten longer than the
/// visibility: the heartbeat keeps it), nacked until it is a dead letter, dead-lettered at
/// its second attempt, or left to run out from its second attempt on.
const NORMAL: u8 = 0;
const POISON: u8 = 1;
const TERMINATE: u8 = 2;
const HANG: u8 = 3;

const POISON_ERROR: &str = "poison: nacked at attempt";
const TERMINATE_ERROR: &str = "poison: terminated";
const FIRST_TRY_ERROR: &str = "first try fails";

fn config() -> Config {
    Config::new(VISIBILITY).with_max_attempts(MAX_ATTEMPTS)
}

async fn open_queue(url: &str, queue: &str) -> PgQueue<Vec<u8>> {
    let options = Options::new()
        .schema(QUEUE_SCHEMA.to_string())
        .heartbeat_every(HEARTBEAT)
        .rescue_every(RESCUE)
        .pool_size(4);
    common::try_open::<Vec<u8>, _>(url, queue.to_string(), config(), BytesCodec, options)
        .await
        .expect("open the queue")
}

async fn connect(url: &str) -> Client {
    let (client, conn) = tokio_postgres::connect(url, NoTls).await.expect("connect");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

/// Sets the flag once the parent closes this process's stdin (its way to say "stop").
fn stdin_closed() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    std::thread::spawn(move || {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        f.store(true, Ordering::SeqCst);
    });
    flag
}

/// A child process: the producer or a worker, until the parent closes its stdin (or kills
/// it).
#[test]
fn kill9_child() {
    let Some([role, url, queue, ts, seed]) =
        child::vars("LEASEQ_KILL9_", ["ROLE", "URL", "QUEUE", "SCHEMA", "SEED"])
    else {
        return;
    };
    let seed: u64 = seed.parse().expect("seed");
    common::runtime().block_on(async {
        match role.as_str() {
            "producer" => producer(&url, &queue, &ts, seed).await,
            "worker" => worker(&url, &queue, &ts, seed).await,
            other => panic!("unknown role {other}"),
        }
    });
}

/// Pushes from 4 tasks at a steady pace until told to stop; records each id whose push
/// returned `Ok`.
async fn producer(url: &str, queue: &str, ts: &str, seed: u64) {
    let q = open_queue(url, queue).await;
    let stop = stdin_closed();
    let mut tasks = Vec::new();
    for p in 0..4u64 {
        let (q, stop, url) = (q.clone(), stop.clone(), url.to_string());
        let insert = format!("INSERT INTO {ts}.pushed (id, kind) VALUES ($1, $2)");
        tasks.push(tokio::spawn(async move {
            let db = connect(&url).await;
            let mut rng = Rng(seed * 1000 + p);
            let mut n = 0u32;
            while !stop.load(Ordering::SeqCst) {
                let kind = match rng.below(100) {
                    0..=3 => POISON,
                    4..=6 => TERMINATE,
                    7..=9 => HANG,
                    _ => NORMAL,
                };
                let mut item = vec![kind];
                item.extend_from_slice(&(p as u32 * 1_000_000 + n).to_le_bytes());
                n += 1;
                let id = q.push(item).await.expect("push");
                db.execute(&insert, &[&(id.get() as i64), &i16::from(kind)])
                    .await
                    .expect("record the push");
                tokio::time::sleep(Duration::from_millis(rng.below(40))).await;
            }
        }));
    }
    for t in tasks {
        t.await.expect("producer task");
    }
}

/// `LOOPS` receive loops with the heartbeat until the parent closes stdin (then the queue).
async fn worker(url: &str, queue: &str, ts: &str, seed: u64) {
    let q = open_queue(url, queue).await;
    let closer = q.clone();
    std::thread::spawn(move || {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        closer.close();
    });
    let mut conns = Vec::new();
    for _ in 0..RECORD_CONNS {
        conns.push(Mutex::new(connect(url).await));
    }
    let conns = Arc::new(conns);
    let mut tasks = Vec::new();
    for l in 0..LOOPS {
        let (q, conns, ts) = (q.clone(), conns.clone(), ts.to_string());
        tasks.push(tokio::spawn(async move {
            let mut rng = Rng(seed * 1000 + l as u64);
            let db = &conns[l % RECORD_CONNS];
            while let Some(d) = q.receive_with_heartbeat().await {
                handle(&q, db, &ts, d, &mut rng).await;
            }
        }));
    }
    for t in tasks {
        t.await.expect("worker loop");
    }
}

/// One run: recorded, then worked on and settled as the item's kind says.
async fn handle(
    q: &PgQueue<Vec<u8>>,
    db: &Mutex<Client>,
    ts: &str,
    mut d: PgDelivery<Vec<u8>>,
    rng: &mut Rng,
) {
    let pid = std::process::id() as i32;
    let (id, attempt) = (d.id().get() as i64, d.attempt() as i32);
    let outcome = |kind: &'static str, error: Option<String>| {
        let sql = format!(
            "INSERT INTO {ts}.outcomes (id, attempt, pid, kind, error) VALUES ($1, $2, $3, $4, $5)"
        );
        async move {
            let c = db.lock().await;
            c.execute(&sql, &[&id, &attempt, &pid, &kind, &error])
                .await
                .expect("record an outcome");
        }
    };
    db.lock()
        .await
        .execute(
            &format!("INSERT INTO {ts}.runs (id, attempt, pid) VALUES ($1, $2, $3)"),
            &[&id, &attempt, &pid],
        )
        .await
        .expect("record a run");
    let retry = |e: String| Failure::error(e).retry_after(Duration::from_millis(50));
    match d.item()[0] {
        NORMAL => {
            let work = if d.item()[1] % 10 == 0 {
                VISIBILITY + Duration::from_millis(200 + rng.below(800))
            } else {
                Duration::from_millis(20 + rng.below(130))
            };
            tokio::time::sleep(work).await;
            let mut c = db.lock().await;
            let tx = c.transaction().await.expect("begin");
            tx.execute(
                &format!(
                    "INSERT INTO {ts}.outcomes (id, attempt, pid, kind) VALUES ($1, $2, $3, 'ack')"
                ),
                &[&id, &attempt, &pid],
            )
            .await
            .expect("record the ack");
            match q.store().ack_in(&tx, d).await {
                Ok(_) => tx.commit().await.expect("commit the ack"),
                Err(e) => {
                    drop(tx);
                    drop(c);
                    outcome("stale", Some(e.to_string())).await;
                }
            }
        }
        POISON => {
            let error = format!("{POISON_ERROR} {attempt}");
            outcome("nack", Some(error.clone())).await;
            let _ = d.nack_with(retry(error)).await;
        }
        TERMINATE | HANG if attempt == 1 => {
            outcome("nack", Some(FIRST_TRY_ERROR.into())).await;
            let _ = d.nack_with(retry(FIRST_TRY_ERROR.into())).await;
        }
        TERMINATE => {
            outcome("term", Some(TERMINATE_ERROR.into())).await;
            d.dead_letter(TERMINATE_ERROR).await.expect("dead letter");
        }
        _ => {
            // Hangs: the lease runs out (no heartbeat, nothing handed back).
            outcome("hang", None).await;
            d.stop_heartbeat();
            drop(d.into_ticket());
        }
    }
}

struct Run {
    exe: std::path::PathBuf,
    url: String,
    queue: String,
    ts: String,
}

impl Run {
    fn spawn(&self, role: &str, seed: u64) -> Child {
        Command::new(&self.exe)
            .args(["--exact", "kill9_child", "--test-threads=1", "--nocapture"])
            .env("LEASEQ_KILL9_ROLE", role)
            .env("LEASEQ_KILL9_URL", &self.url)
            .env("LEASEQ_KILL9_QUEUE", &self.queue)
            .env("LEASEQ_KILL9_SCHEMA", &self.ts)
            .env("LEASEQ_KILL9_QUEUE_SCHEMA", QUEUE_SCHEMA.to_string())
            .env("LEASEQ_KILL9_SEED", seed.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn a child")
    }
}

/// Waits for a child told to stop; fails the test if it does not end well in time.
async fn wait_exit(child: &mut Child, what: &str) {
    drop(child.stdin.take());
    let until = Instant::now() + Duration::from_secs(20);
    common::wait_success(child, what, until).await;
}

fn assert_running(children: &mut [Child]) {
    for c in children {
        if let Some(status) = c.try_wait().expect("wait") {
            panic!("a child ended by itself: {status}");
        }
    }
}

#[test]
fn kill9_workers_lose_nothing() {
    let Some(url) = common::server() else { return };
    let kills: usize = std::env::var("LEASEQ_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let run = Run {
        exe: std::env::current_exe().unwrap(),
        url: url.clone(),
        queue: common::unique("kill9"),
        ts: format!("kill9_{}_{nanos}", std::process::id()),
    };
    eprintln!(
        "kill9: queue {:?}; records in schema {} (kept if the test fails)",
        run.queue, run.ts
    );
    let started = Instant::now();
    common::runtime().block_on(async {
        let db = connect(&url).await;
        db.batch_execute(&check::schema_sql(&run.ts))
            .await
            .expect("create the test's schema");
        // Open once, so that the children do not race to create the queue's schema.
        drop(open_queue(&url, &run.queue).await);

        let mut rng = Rng(nanos as u64);
        let mut workers: Vec<Child> = (0..WORKERS)
            .map(|w| run.spawn("worker", w as u64))
            .collect();
        let mut producer = run.spawn("producer", 99);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        for k in 0..kills {
            tokio::time::sleep(Duration::from_millis(800 + rng.below(1200))).await;
            assert_running(&mut workers);
            assert_running(std::slice::from_mut(&mut producer));
            let w = rng.below(WORKERS as u64) as usize;
            let pid = workers[w].id() as i32;
            workers[w].kill().expect("SIGKILL a worker");
            db.execute(
                &format!("INSERT INTO {}.kills (pid) VALUES ($1)", run.ts),
                &[&pid],
            )
            .await
            .expect("record the kill");
            let status = workers[w].wait().expect("reap");
            assert!(!status.success(), "the worker ended by itself: {status:?}");
            workers[w] = run.spawn("worker", 100 + k as u64);
        }
        tokio::time::sleep(Duration::from_millis(1000)).await;
        wait_exit(&mut producer, "the producer").await;
        let produced = started.elapsed();

        // Drain: every item acked or a dead letter (hang items take MAX_ATTEMPTS leases).
        let live = format!(
            "SELECT count(*) FROM {QUEUE_SCHEMA}.items WHERE queue = $1 AND state IN (0, 1)"
        );
        let until = Instant::now() + Duration::from_secs(40);
        loop {
            assert_running(&mut workers);
            let n: i64 = db.query_one(&live, &[&run.queue]).await.unwrap().get(0);
            if n == 0 {
                break;
            }
            assert!(Instant::now() < until, "{n} items still live after 40 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        for (i, w) in workers.iter_mut().enumerate() {
            wait_exit(w, &format!("worker {i}")).await;
        }
        let q = open_queue(&url, &run.queue).await;
        let dead = q
            .dead_letters(leaseq_async::Page::first(1_000_000))
            .await
            .expect("dead letters");
        let facts = check::Facts::load(&db, &run.ts, &run.queue, dead).await;
        let report = facts.check(kills);
        println!(
            "kill -9 (postgres): {kills} kills, {:.1?} of load, {:.1?} in all; {report}",
            produced,
            started.elapsed()
        );
        let stats = q.refresh_stats().await.expect("stats");
        assert_eq!(stats.live(), 0, "{stats:?}");
        q.purge_dead_letters().await.expect("purge");
        db.batch_execute(&format!("DROP SCHEMA {} CASCADE", run.ts))
            .await
            .expect("drop the test's schema");
    });
}
