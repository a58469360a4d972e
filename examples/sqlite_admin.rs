//! An operator's look at a durable (SQLite) leaseq queue after an incident: its stats, its
//! dead letters (id, attempts, reason, last error, age, payload), and redriving one.
//!
//! ```text
//! cargo run --release --features sqlite --example sqlite_admin -- <file> [stats|dead|redrive <id>]
//! cargo run --release --features sqlite --example sqlite_admin            # a demo file with dead letters
//! ```
//!
//! Run it while the queue's own process is stopped: opening the file brings back the leases
//! that process held (their attempt counted, "process restart"), as its next start would.
//! Items are read as raw bytes (`BytesCodec`), whatever codec the application uses; the
//! payload is shown as text when it is printable, else in hex.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use leaseq_async::{Config, Failure, MessageId, Runtime};
use leaseq_smol::SmolRuntime;
use leaseq_sqlite::{BytesCodec, Options, SqliteQueue};

type Queue = SqliteQueue<Vec<u8>, SmolRuntime, BytesCodec>;

/// The admin's config: attempts are not limited here, so that opening the file never
/// dead-letters anything the application's own config would not.
fn admin_config() -> Config {
    Config::new(Duration::from_secs(30)).with_max_attempts(u32::MAX)
}

fn open_queue(path: &PathBuf) -> Result<Queue, String> {
    smol::block_on(
        leaseq_async::LeaseQueue::builder(admin_config())
            .runtime(SmolRuntime::global())
            .codec(BytesCodec)
            .open(leaseq_sqlite::Sqlite::file(path).options(Options::default())),
    )
    .map_err(|e| format!("{}: {e}", path.display()))
}

fn preview(bytes: &[u8]) -> String {
    const MAX: usize = 48;
    let shown = &bytes[..bytes.len().min(MAX)];
    let more = if bytes.len() > MAX { "..." } else { "" };
    match std::str::from_utf8(shown) {
        Ok(s) if s.chars().all(|c| !c.is_control()) => format!("{s:?}{more}"),
        _ => {
            let hex: String = shown.iter().map(|b| format!("{b:02x}")).collect();
            format!("0x{hex}{more}")
        }
    }
}

fn stats(q: &Queue) {
    // Counters since this open: the file keeps items, not history.
    let s = q.stats();
    println!("{s}");
    println!(
        "live {} (ready {}, delayed {}, in flight {}), dead letters {}",
        s.live(),
        s.ready,
        s.delayed,
        s.in_flight,
        s.dead
    );
}

fn dead(q: &Queue) {
    let letters = q.store().memory().dead_letters();
    if letters.is_empty() {
        println!("no dead letters");
        return;
    }
    let now = q.runtime().now();
    println!(
        "{:>8}  {:>8}  {:<12}  {:>10}  {:<36}  payload",
        "id", "attempts", "reason", "age", "last error"
    );
    for d in &letters {
        // Times before this process's clock began read as its start (the clock's zero):
        // shown as "before".
        let age = if d.at.as_nanos() == 0 {
            "before".to_string()
        } else {
            let age = Duration::from_nanos(now.as_nanos().saturating_sub(d.at.as_nanos()));
            format!("{:.1}s", age.as_secs_f64())
        };
        println!(
            "{:>8}  {:>8}  {:<12}  {:>10}  {:<36}  {}",
            d.id.get(),
            d.attempts,
            d.reason.to_string(),
            age,
            d.last_error.as_deref().unwrap_or("-"),
            preview(&d.item)
        );
    }
}

async fn redrive(q: &Queue, id: u64) -> Result<(), String> {
    match q.redrive(MessageId::new(id)).await {
        Ok(id) => {
            println!("redriven: {id} is ready again, its attempts reset (on disk)");
            Ok(())
        }
        Err(e) => Err(format!("cannot redrive #{id}: {e:?}")),
    }
}

/// A demo file in the temp dir: a few items, three of them dead-lettered in different ways.
async fn demo_file() -> Result<PathBuf, String> {
    let path = std::env::temp_dir().join(format!("leaseq-admin-demo-{}.db", std::process::id()));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let config = Config::new(Duration::from_secs(30)).with_max_attempts(2);
    let q: Queue = smol::block_on(
        leaseq_async::LeaseQueue::builder(config)
            .runtime(SmolRuntime::global())
            .codec(BytesCodec)
            .open(leaseq_sqlite::Sqlite::file(&path).options(Options::default())),
    )
    .map_err(|e| e.to_string())?;
    for job in [
        "invoice 981".as_bytes(),
        b"resize img_0042.png",
        &[0xde, 0xad, 0xbe, 0xef, 0x00, 0x01],
        b"email user 17",
        b"report 2026-11",
    ] {
        q.push(job.to_vec()).await.map_err(|e| e.to_string())?;
    }
    // Terminal failure: dead-lettered by the handler.
    let d = q.receive().await.ok_or("closed")?;
    d.dead_letter("customer 981 has no billing address")
        .await
        .map_err(|e| e.to_string())?;
    // Fails on every attempt: dead-lettered after max attempts (its retry goes to the
    // back of the queue).
    let d = q.receive().await.ok_or("closed")?;
    let flaky = d.id();
    d.nack_with(Failure::error("upstream 503").retry_after(Duration::ZERO))
        .await
        .map_err(|e| e.to_string())?;
    // Undecodable input.
    let d = q.receive().await.ok_or("closed")?;
    d.dead_letter("payload is not UTF-8")
        .await
        .map_err(|e| e.to_string())?;
    // The rest go through, then the flaky one fails again.
    while let Some(d) = q.receive().await {
        if d.id() == flaky {
            d.nack_with(Failure::error("upstream 503 (again)").retry_after(Duration::ZERO))
                .await
                .map_err(|e| e.to_string())?;
            break;
        }
        d.ack().await.map_err(|e| e.to_string())?;
    }
    q.store().sync().await.map_err(|e| e.to_string())?;
    Ok(path)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = smol::block_on(async {
        let Some(file) = args.first() else {
            let path = demo_file().await?;
            println!("demo queue file: {}\n", path.display());
            let q = open_queue(&path)?;
            stats(&q);
            println!();
            dead(&q);
            let first = q
                .store()
                .memory()
                .dead_letters()
                .first()
                .map(|d| d.id.get());
            if let Some(id) = first {
                println!();
                redrive(&q, id).await?;
                stats(&q);
            }
            println!(
                "\ntry: cargo run --release --features sqlite --example sqlite_admin -- {} dead",
                path.display()
            );
            return Ok(());
        };
        let path = PathBuf::from(file);
        if !path.exists() {
            return Err(format!("{}: no such file", path.display()));
        }
        let q = open_queue(&path)?;
        match args.get(1).map(String::as_str) {
            None | Some("stats") => stats(&q),
            Some("dead") => dead(&q),
            Some("redrive") => {
                let id = args
                    .get(2)
                    .and_then(|s| s.trim_start_matches('#').parse::<u64>().ok())
                    .ok_or("usage: sqlite_admin <file> redrive <id>")?;
                redrive(&q, id).await?;
            }
            Some(other) => {
                return Err(format!(
                "unknown command {other:?}; usage: sqlite_admin <file> [stats|dead|redrive <id>]"
            ))
            }
        }
        Ok::<(), String>(())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sqlite_admin: {e}");
            ExitCode::FAILURE
        }
    }
}
