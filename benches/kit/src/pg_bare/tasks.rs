//! The bare loop's tasks: the producer and the workers (claim a batch, ack it in one
//! statement), and what they share and count.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Barrier;
use tokio_postgres::{Client, Statement};

use super::sql::{claim_sql, in_schema, ACK_SQL, PUSH_SQL};
use super::{EMPTY_POLL, PAYLOAD_BYTES, PUSH_BATCH};

/// What one worker saw.
#[derive(Default)]
pub(super) struct WorkerTally {
    /// Items its claims returned.
    pub(super) claimed: u64,
    /// Rows its acks deleted.
    pub(super) acked: u64,
    /// Claimed items whose ack deleted no row.
    pub(super) lost: u64,
    /// Claimed items whose lease was not 1, that is, delivered before.
    pub(super) redelivered: u64,
    /// Payloads of the wrong size.
    pub(super) bad_payloads: u64,
    /// When its last ack finished.
    pub(super) last_ack: Option<Instant>,
}

/// State the tasks of one run share.
pub(super) struct Shared {
    pub(super) items: u64,
    /// The schema of the table (see [`run_bare_in`](super::run_bare_in)).
    pub(super) schema: String,
    /// Rows deleted by acks, across the workers.
    pub(super) acked: AtomicU64,
    /// Set when a task fails or an ack loses items, so that the others stop instead of
    /// waiting for items that will never be acked.
    pub(super) stop: AtomicBool,
}

impl Shared {
    pub(super) fn running(&self) -> bool {
        !self.stop.load(Ordering::Acquire) && self.acked.load(Ordering::Acquire) < self.items
    }
}

/// The producer: prepares its statement, waits at `ready` for the workers, then pushes
/// `items` payloads in batches of up to [`PUSH_BATCH`]. Returns when it started pushing.
pub(super) async fn produce(
    client: Client,
    shared: Arc<Shared>,
    ready: Arc<Barrier>,
) -> Result<Instant, tokio_postgres::Error> {
    let push = client.prepare(&in_schema(PUSH_SQL, &shared.schema)).await;
    ready.wait().await;
    let push = push.inspect_err(|_| shared.stop.store(true, Ordering::Release))?;
    let start = Instant::now();
    let mut next = 0u64;
    let mut batch: Vec<[u8; PAYLOAD_BYTES]> = Vec::with_capacity(PUSH_BATCH);
    while next < shared.items && !shared.stop.load(Ordering::Acquire) {
        let n = (shared.items - next).min(PUSH_BATCH as u64);
        batch.clear();
        batch.extend((next..next + n).map(|i| {
            let mut p = [0u8; PAYLOAD_BYTES];
            p[..8].copy_from_slice(&i.to_le_bytes());
            p[8..].copy_from_slice(&(!i).to_le_bytes());
            p
        }));
        // `&[u8]` binds as `bytea` (`[u8; N]` only with tokio-postgres' `array-impls`).
        let payloads: Vec<&[u8]> = batch.iter().map(|p| &p[..]).collect();
        if let Err(e) = client.execute(&push, &[&payloads]).await {
            shared.stop.store(true, Ordering::Release);
            return Err(e);
        }
        next += n;
    }
    Ok(start)
}

/// One worker: prepares its statements, waits at `ready` for the others, then claims up to
/// `claim` and acks them in one statement, until every item is acked or a task failed.
pub(super) async fn work(
    client: Client,
    claim: usize,
    shared: Arc<Shared>,
    ready: Arc<Barrier>,
) -> Result<WorkerTally, tokio_postgres::Error> {
    let prepared = async {
        Ok::<_, tokio_postgres::Error>((
            client
                .prepare(&in_schema(&claim_sql(claim), &shared.schema))
                .await?,
            client.prepare(&in_schema(ACK_SQL, &shared.schema)).await?,
        ))
    }
    .await;
    ready.wait().await;
    let result = match prepared {
        Ok((claim_stmt, ack)) => work_loop(&client, &claim_stmt, &ack, claim, &shared).await,
        Err(e) => Err(e),
    };
    if result.is_err() {
        shared.stop.store(true, Ordering::Release);
    }
    result
}

async fn work_loop(
    client: &Client,
    claim_stmt: &Statement,
    ack: &Statement,
    claim: usize,
    shared: &Shared,
) -> Result<WorkerTally, tokio_postgres::Error> {
    let mut tally = WorkerTally::default();
    let mut ids: Vec<i64> = Vec::with_capacity(claim);
    let mut leases: Vec<i64> = Vec::with_capacity(claim);
    while shared.running() {
        let rows = client.query(claim_stmt, &[]).await?;
        if rows.is_empty() {
            tokio::time::sleep(EMPTY_POLL).await;
            continue;
        }
        ids.clear();
        leases.clear();
        for row in &rows {
            let lease: i64 = row.get(1);
            let payload: &[u8] = row.get(2);
            ids.push(row.get(0));
            leases.push(lease);
            tally.redelivered += u64::from(lease != 1);
            tally.bad_payloads += u64::from(payload.len() != PAYLOAD_BYTES);
        }
        tally.claimed += rows.len() as u64;
        let deleted = client.execute(ack, &[&ids, &leases]).await?;
        tally.acked += deleted;
        tally.last_ack = Some(Instant::now());
        shared.acked.fetch_add(deleted, Ordering::AcqRel);
        if deleted != rows.len() as u64 {
            tally.lost += rows.len() as u64 - deleted;
            shared.stop.store(true, Ordering::Release);
        }
    }
    Ok(tally)
}
