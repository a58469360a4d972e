//! Commit-to-start latency of a push inside the caller's transaction
//! (`PgStore::push_in`, issue 30's goal: p50 <= 50 ms), beside a plain `push`'s, in one
//! run on the same server (`pg_bench --tx`).
//!
//! Two opens of one queue, as two processes: the producer's, and the worker's, a
//! [`PgPool`](leaseq_postgres::PgPool) of one worker whose store polls only every
//! [`WORKER_POLL`], so that what wakes it is the notification the commit delivers. The
//! samples alternate: a **transactional push** (`BEGIN`, `push_in`, then the clock starts
//! and `COMMIT` is sent) and a **plain push** (the clock starts, then `push().await`, the
//! store's writer inserting and committing it); each ends when the worker's handler starts
//! (the instant it sent). The worker is idle before each sample (the previous one handled,
//! then a pause of [`GAP`]). Both clocks include the commit's round trip.

use std::time::{Duration, Instant};

use leaseq_async::{Config, Job, Push};
use leaseq_postgres::{BytesCodec, Options, PgQueue, Postgres};
use tokio_postgres::NoTls;

use crate::pg_store_bench::{unique, BenchError};

/// The worker store's poll interval: longer than any sample, so none is a poll's.
pub const WORKER_POLL: Duration = Duration::from_secs(30);
/// The pause after each sample, so that the worker waits idle for the next.
pub const GAP: Duration = Duration::from_millis(20);

/// Commit-to-start latencies, each sorted.
#[derive(Debug, Clone, Default)]
pub struct TxLatency {
    /// A push in the caller's transaction: from `COMMIT` sent to the handler's start.
    pub tx: Vec<Duration>,
    /// A plain `push().await`: from the call to the handler's start.
    pub plain: Vec<Duration>,
}

async fn open(
    url: &str,
    schema: &str,
    queue: &str,
    poll: Duration,
) -> Result<PgQueue<Vec<u8>>, BenchError> {
    let options = Options::new().schema(schema).poll_interval(poll);
    Ok(
        leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(Config::new(Duration::from_secs(30)))
            .name(queue.to_string())
            .codec(BytesCodec)
            .open(Postgres::url(url).options(options))
            .await?,
    )
}

/// `samples` of each kind, alternating, on a fresh queue of `schema` (after 10 of each,
/// discarded).
pub async fn run_tx_latency(
    url: &str,
    schema: &str,
    samples: usize,
) -> Result<TxLatency, BenchError> {
    let queue = unique("bench-tx");
    let producer = open(url, schema, &queue, Duration::from_secs(1)).await?;
    let worker = open(url, schema, &queue, WORKER_POLL).await?;
    let (started, mut starts) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let pool = leaseq_tokio::Pool::builder(worker.clone())
        .workers(1)
        .spawn(move |_job: Job<Vec<u8>>| {
            let _ = started.send(Instant::now());
            async { Ok(()) }
        });
    let (mut db, conn) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(conn);
    let mut out = TxLatency::default();
    let warm_up = 10;
    for i in 0..warm_up + samples {
        let in_tx = i % 2 == 0;
        for kind in [in_tx, !in_tx] {
            tokio::time::sleep(GAP).await;
            let t0 = if kind {
                let tx = db.transaction().await?;
                producer
                    .store()
                    .push_in(&tx, vec![0; 16], Push::new())
                    .await
                    .map_err(|e| e.to_string())?;
                let t0 = Instant::now();
                tx.commit().await?;
                t0
            } else {
                let t0 = Instant::now();
                producer
                    .push(vec![0; 16])
                    .await
                    .map_err(|e| e.to_string())?;
                t0
            };
            let start = tokio::time::timeout(WORKER_POLL / 2, starts.recv())
                .await
                .map_err(|_| "the worker was not woken")?
                .ok_or("the worker pool ended")?;
            if i >= warm_up {
                let took = start.saturating_duration_since(t0);
                if kind {
                    out.tx.push(took)
                } else {
                    out.plain.push(took)
                }
            }
        }
    }
    pool.shutdown(Duration::from_secs(5)).await;
    out.tx.sort();
    out.plain.sort();
    Ok(out)
}
