//! Issue 17's benchmark (`examples/pipeline_bench.rs`): the pipelined `Pool`, the
//! one-at-a-time consumer and the batch path of every store, side by side with their
//! baselines in one run.
//!
//! The workload is the issue's: one producer, four consumers, 16-byte items, a no-op
//! handler. The producer pushes in batches of [`PUSH_BATCH`], each awaited (committed)
//! before the next, as the bare Postgres loop's producer does; the consumers run while it
//! pushes. Every run checks that each item was handled (acked) exactly once at its first
//! attempt and fails otherwise.
//!
//! - [`runs`]: the leaseq rows, generic over the store (memory, SQLite, Postgres): a
//!   [`Pool`](leaseq_async::Pool) of 4 workers, one-at-a-time consumers with the awaited
//!   ack, and the batch path (`receive_batch(16)` + `ack_batch`).
//! - [`curve`]: a `Pool` whose handler sleeps 1 ms, at 1 to 64 workers, beside flume
//!   consumers running the same handler (what the runtime's timer allows).
//! - [`low_load`]: push -> handler start at 100 items/s.
//! - `nats` and `rabbit` (feature `brokers`): the broker rows.
//! - [`stores`]: a fresh queue per run; [`report`]: medians, the tables, the goals.

pub mod curve;
mod goals;
pub mod low_load;
#[cfg(feature = "brokers")]
pub mod nats;
pub mod print;
#[cfg(feature = "brokers")]
pub mod rabbit;
pub mod report;
pub mod runs;
pub mod stores;

use std::error::Error;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

pub use crate::pg_bare::{PAYLOAD_BYTES, PUSH_BATCH};

/// Whatever failed: a store, a server, or a check.
pub type BenchError = Box<dyn Error + Send + Sync>;

/// The number of consumers (workers) of every throughput row.
pub const CONSUMERS: usize = 4;

/// The `i`-th payload: 16 bytes, `i` then `!i`.
pub fn payload(i: u64) -> Vec<u8> {
    let mut p = vec![0u8; PAYLOAD_BYTES];
    p[..8].copy_from_slice(&i.to_le_bytes());
    p[8..].copy_from_slice(&(!i).to_le_bytes());
    p
}

/// Whether a payload is one [`payload`] made.
pub fn payload_ok(p: &[u8]) -> bool {
    p.len() == PAYLOAD_BYTES && p[..8].iter().zip(&p[8..]).all(|(a, b)| *a == !*b)
}

/// Items per second.
pub fn rate(items: u64, took: Duration) -> f64 {
    items as f64 / took.as_secs_f64()
}

/// Whether a TCP server answers at `addr` within a second (the broker rows are skipped,
/// loudly, when not).
pub fn reachable(addr: &str) -> bool {
    addr.parse::<SocketAddr>()
        .ok()
        .is_some_and(|a| TcpStream::connect_timeout(&a, Duration::from_secs(1)).is_ok())
}

/// A broker consumer task: runs until aborted, or fails.
#[cfg(feature = "brokers")]
type ConsumerTask = tokio::task::JoinHandle<Result<(), BenchError>>;

/// Waits until `all` is notified (the last ack), then aborts the consumer tasks. Fails if a
/// task ended first (it failed) or nothing came for `limit`.
#[cfg(feature = "brokers")]
async fn wait_acked(
    all: &tokio::sync::Notify,
    tasks: Vec<ConsumerTask>,
    limit: Duration,
) -> Result<(), BenchError> {
    let done = all.notified();
    tokio::pin!(done);
    let deadline = tokio::time::Instant::now() + limit;
    let outcome = loop {
        tokio::select! {
            _ = &mut done => break Ok(()),
            _ = tokio::time::sleep(Duration::from_millis(50)) => {
                if tasks.iter().any(|t| t.is_finished()) {
                    break Err("a consumer stopped early");
                }
                if tokio::time::Instant::now() > deadline {
                    break Err("timed out waiting for the last ack");
                }
            }
        }
    };
    for t in &tasks {
        t.abort();
    }
    if outcome.is_err() {
        for t in tasks {
            if let Ok(Err(e)) = t.await {
                return Err(e);
            }
        }
    }
    Ok(outcome?)
}
