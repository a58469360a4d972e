//! Several worker processes on one Postgres queue (`pg_bench --procs N`, issue 32's
//! measure of a capacity at 8 processes): `N` OS processes (this benchmark's binary run
//! again with [`WORKER_ARG`]) each open the queue and run a `PgPool` of 4 workers (no-op
//! handler); this process pushes the items (one producer, batches of 256, each awaited)
//! and times until the queue's rows are gone. Rounds alternate without and with a capacity
//! (`Config::with_capacity`, never reached), each on a queue of its own. At the end of a
//! round each worker is told to stop (its stdin closed): it shuts its pool down and prints
//! how many items it handled; the sum must be the items pushed and no row may be left
//! (none lost, none run twice).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use leaseq_async::Job;
use leaseq_postgres::{Options, PgPool};

use crate::pg_store_bench::{open_capped, push_range, BenchError};

/// The first argument that makes the binary a worker process: then the schema, the queue
/// and the capacity (0: none).
pub const WORKER_ARG: &str = "--procs-worker";

/// A worker process: opens the queue, runs a pool of 4 until its stdin closes, then prints
/// `HANDLED n`.
pub async fn worker(url: &str, args: &[String]) -> Result<(), BenchError> {
    let [schema, queue, capacity] = args else {
        return Err(format!("{WORKER_ARG} SCHEMA QUEUE CAPACITY, not {args:?}").into());
    };
    let capacity: usize = capacity.parse()?;
    let cap = (capacity > 0).then_some(capacity);
    let q = open_capped(url, schema, queue, Options::new(), cap).await?;
    let pool: PgPool<Vec<u8>> = PgPool::builder(q.clone())
        .workers(4)
        .spawn(|_job: Job<Vec<u8>>| async { Ok(()) });
    println!("READY");
    std::io::stdout().flush()?;
    // Until the parent closes our stdin.
    tokio::task::spawn_blocking(|| std::io::stdin().lines().count()).await?;
    let report = pool.shutdown(Duration::from_secs(30)).await;
    println!("HANDLED {}", report.stats.ok);
    Ok(())
}

/// One round: `procs` worker processes and this process's producer on a fresh queue of
/// `schema` (bounded at `capacity` if given); items/s.
pub async fn run_procs(
    url: &str,
    schema: &str,
    procs: usize,
    items: u64,
    capacity: Option<usize>,
) -> Result<f64, BenchError> {
    let queue = crate::pg_store_bench::unique("bench-procs");
    let q = open_capped(url, schema, &queue, Options::new(), capacity).await?;
    let exe = std::env::current_exe()?;
    let mut children: Vec<(Child, BufReader<std::process::ChildStdout>)> = Vec::new();
    for _ in 0..procs {
        let mut child = Command::new(&exe)
            .args([
                WORKER_ARG,
                schema,
                &queue,
                &capacity.unwrap_or(0).to_string(),
            ])
            .env("LEASEQ_PG_URL", url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut line = String::new();
        out.read_line(&mut line)?;
        if line.trim() != "READY" {
            return Err(format!("a worker said {line:?}").into());
        }
        children.push((child, out));
    }
    let start = Instant::now();
    push_range(&q, 0, items).await?;
    loop {
        let s = q.refresh_stats().await?;
        if (s.ready, s.delayed, s.in_flight) == (0, 0, 0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = start.elapsed();
    let mut handled = 0u64;
    for (mut child, mut out) in children {
        drop(child.stdin.take());
        let mut line = String::new();
        while out.read_line(&mut line)? > 0 {
            if let Some(n) = line.trim().strip_prefix("HANDLED ") {
                handled += n.parse::<u64>()?;
            }
            line.clear();
        }
        child.wait()?;
    }
    let s = q.refresh_stats().await?;
    if handled != items || s.dead != 0 {
        return Err(format!(
            "{handled} items handled of {items} pushed, {} dead letters",
            s.dead
        )
        .into());
    }
    Ok(items as f64 / elapsed.as_secs_f64())
}
