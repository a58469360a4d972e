//! Where a fan-out pays more than independent jobs, per item (issue 33;
//! `examples/pg_fanout_split.rs`): the runs of [`crate::pg_graph_bench`]'s fan-out rounds
//! (a `PgPool` of 4 no-op workers on `n` independent jobs, then on a batch of `n` children
//! into one callback), each split at the push's return and at the last job handled, with
//! at each point:
//!
//! - the wall clock;
//! - this process's CPU (the client: pushes, the pool, its claims and acks);
//! - the CPU of the database's backends ([`db_backends_cpu`]: every process titled
//!   `postgres: .. DBNAME ..`, other databases left out);
//! - the cluster's WAL position and `pg_stat_wal`'s writes and syncs (cluster-wide: other
//!   databases' work counts too, so read them on a quiet server);
//! - the database's committed transactions (`pg_stat_database.xact_commit`: one a claim,
//!   an ack statement, a push), read only at the run's start and end, a second after its
//!   queue closed (backends report their counts at most once a second).

use std::time::{Duration, Instant};

use tokio_postgres::{Client, NoTls};

use crate::cpu::process_cpu_time;
use crate::pg_graph_bench::{counting_pool, push_round, quiet};
use crate::pg_store_bench::{open_queue, unique, BenchError};

/// CPU time so far of every backend of database `db` on this machine (Linux: `/proc`),
/// summed: each process whose title is `postgres: ... db ...`. A backend that exits takes
/// its time with it: read while the run's connections are open.
pub fn db_backends_cpu(db: &str) -> Duration {
    let needle = format!(" {db} ");
    let mut ticks = 0u64;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Duration::ZERO;
    };
    for entry in dir.flatten() {
        let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmd: String = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if !cmd.starts_with("postgres:") || !cmd.contains(&needle) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 2..].split_whitespace().collect();
        ticks += (11..13)
            .filter_map(|i| fields.get(i)?.parse::<u64>().ok())
            .sum::<u64>();
    }
    Duration::from_millis(ticks * 10)
}

/// One point of a run.
#[derive(Debug, Clone, Copy)]
struct Point {
    at: Instant,
    client: Duration,
    server: Duration,
    wal_lsn: i64,
    wal_writes: i64,
    wal_syncs: i64,
}

async fn point(c: &Client, db: &str) -> Result<Point, BenchError> {
    let r = c
        .query_one(
            "SELECT (pg_current_wal_lsn() - '0/0')::bigint, wal_write, wal_sync FROM pg_stat_wal",
            &[],
        )
        .await?;
    Ok(Point {
        at: Instant::now(),
        client: process_cpu_time().unwrap_or_default(),
        server: db_backends_cpu(db),
        wal_lsn: r.get(0),
        wal_writes: r.get(1),
        wal_syncs: r.get(2),
    })
}

/// What one phase cost, from one point to the next.
#[derive(Debug, Clone, Copy, Default)]
pub struct Phase {
    /// Wall time.
    pub wall: Duration,
    /// This process's CPU.
    pub client: Duration,
    /// The database's backends' CPU.
    pub server: Duration,
    /// WAL bytes written (cluster-wide).
    pub wal_bytes: i64,
    /// WAL writes and syncs (`pg_stat_wal`, cluster-wide).
    pub wal_writes: i64,
    /// WAL syncs (`pg_stat_wal`, cluster-wide).
    pub wal_syncs: i64,
}

fn phase(a: &Point, b: &Point) -> Phase {
    Phase {
        wall: b.at - a.at,
        client: b.client.saturating_sub(a.client),
        server: b.server.saturating_sub(a.server),
        wal_bytes: b.wal_lsn - a.wal_lsn,
        wal_writes: b.wal_writes - a.wal_writes,
        wal_syncs: b.wal_syncs - a.wal_syncs,
    }
}

/// One run split: the push (from the first push to its return) and the rest (to the last
/// job handled), and the database's commits over the whole run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Split {
    /// From the first push to its return.
    pub push: Phase,
    /// From the push's return to the last job handled (a fan-out's callback).
    pub drain: Phase,
    /// Transactions committed in the database over the run (`xact_commit`).
    pub commits: i64,
}

async fn commits(c: &Client, db: &str) -> Result<i64, BenchError> {
    c.batch_execute("SELECT pg_stat_clear_snapshot()").await?;
    Ok(c.query_one(
        "SELECT xact_commit FROM pg_stat_database WHERE datname = $1",
        &[&db],
    )
    .await?
    .get(0))
}

/// One run of `n` jobs (independent, or a fan-out's children and its callback) in
/// `schema` of database `db`, split.
pub async fn split_run(
    url: &str,
    db: &str,
    schema: &str,
    n: u64,
    fanout: bool,
) -> Result<Split, BenchError> {
    let (c, conn) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(conn);
    let q = open_queue(url, schema, &unique("bench-split"), quiet()).await?;
    let target = if fanout { n + 1 } else { n };
    let (pool, all, _seen) = counting_pool(&q, n, target);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let c0 = commits(&c, db).await?;
    let p0 = point(&c, db).await?;
    push_round(&q, n, fanout).await?;
    let p1 = point(&c, db).await?;
    all.notified().await;
    let p2 = point(&c, db).await?;
    let report = pool.shutdown(Duration::from_secs(30)).await;
    if report.stats.ok != target {
        return Err(format!("pool handled {} of {target}", report.stats.ok).into());
    }
    q.close().await.map_err(|e| format!("close: {e:?}"))?;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let c1 = commits(&c, db).await?;
    Ok(Split {
        push: phase(&p0, &p1),
        drain: phase(&p1, &p2),
        commits: c1 - c0,
    })
}
