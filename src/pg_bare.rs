//! The baseline for a Postgres-backed queue: a bare `FOR UPDATE SKIP LOCKED` loop, with no
//! leaseq code in it, measured end to end.
//!
//! [`run_bare`] uses its own table, `leaseq_bench.bare_items` (created if missing, emptied and
//! given queue-like planner statistics at the start of every run, see [`RESET_SQL`]; two runs
//! against one database must not overlap). One producer task inserts 16-byte payloads in
//! batches of up to [`PUSH_BATCH`] with `INSERT ... SELECT * FROM unnest($1::bytea[])`;
//! `workers` worker tasks, each on its own connection, loop:
//!
//! 1. claim up to `claim` visible items in one statement (`UPDATE ... WHERE id =
//!    ANY(ARRAY(SELECT id ... ORDER BY visible_at, id LIMIT n FOR UPDATE SKIP LOCKED))
//!    RETURNING id, lease, payload`), which sets `state = 1`, bumps `lease` and `attempts`
//!    and pushes `visible_at` 30 s ahead;
//! 2. ack the whole batch in one statement (`DELETE ... USING unnest($1::bigint[],
//!    $2::bigint[])`), matching each row on its id *and* the lease it was claimed with.
//!
//! Every statement is prepared once per connection, and each runs as its own autocommit
//! transaction with the server's `synchronous_commit` (on by default): a claim and an ack
//! each cost one WAL flush, shared between the connections that commit together.
//!
//! The claim's `ANY(ARRAY(SELECT ...))` form makes the sub-select an init plan on the partial
//! index `(visible_at, id) WHERE state = 0`, with the outer update on the primary key; the
//! `id IN (SELECT ...)` form is reported (by the leaseq-postgres work, not re-measured here)
//! to lose the index once prepared.
//!
//! **Wake-up when empty.** A worker whose claim returns no row sleeps [`EMPTY_POLL`] (1 ms;
//! tokio's timer rounds up to its 1 ms tick, so 1–2 ms in practice) and claims again. There is
//! no `LISTEN/NOTIFY`: the figure is the loop's, with the cheapest wake-up to write. While the
//! producer keeps ahead, a worker never sleeps; the poll only costs at the start, and when the
//! workers catch up with the producer.
//!
//! The clock runs from just before the first push to the last ack; connecting, preparing
//! statements and setting the table up are outside it. At the end the run checks that every
//! item was acked exactly once (acks deleted `items` rows in total, none was claimed twice,
//! the table is empty) and panics otherwise.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Barrier;
use tokio_postgres::{Client, NoTls, Statement};

/// The largest batch the producer inserts in one statement.
pub const PUSH_BATCH: usize = 256;

/// The size of every payload, in bytes.
pub const PAYLOAD_BYTES: usize = 16;

/// How long a worker sleeps after a claim that found nothing, before it claims again.
pub const EMPTY_POLL: Duration = Duration::from_millis(1);

/// The schema, table and claim index of the bare loop; every statement is idempotent.
pub const SETUP_SQL: &str = "
CREATE SCHEMA IF NOT EXISTS leaseq_bench;
CREATE TABLE IF NOT EXISTS leaseq_bench.bare_items (
    id bigserial PRIMARY KEY,
    payload bytea NOT NULL,
    visible_at timestamptz NOT NULL DEFAULT now(),
    state smallint NOT NULL DEFAULT 0,
    lease bigint NOT NULL DEFAULT 0,
    attempts int NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS bare_items_claim
    ON leaseq_bench.bare_items (visible_at, id) WHERE state = 0;
";

/// Empties the table and leaves the planner the picture of a queue table under load, each
/// statement in its own transaction: 10,000 pending rows, `ANALYZE`, `DELETE` (not `TRUNCATE`).
/// The table is then empty, but the planner still counts 10,000 rows, nearly all `state = 0`.
/// The seed rows are visible at `infinity`, so their dead entries sit at the far end of the
/// claim index, past every row a claim reaches, and their ids sort before the run's in the
/// primary key: no scan of the run walks through them.
///
/// Why: each connection plans its statements on a nearly empty table and keeps the plans for
/// the run (the claim has no parameters, so its first, generic plan is final; the ack goes
/// generic after five executions; autovacuum, which could replan them, may be off, as here).
/// Planned for an empty table, the claim scans and sorts every pending row under `LockRows`
/// and the ack hash-joins a scan of the table: linear in the backlog per statement (6–8 ms per
/// claim at 20k pending rows against 0.1–0.2 ms on the index, measured here). [`run_bare`]
/// checks the plans before it starts the clock.
pub const RESET_SQL: [&str; 4] = [
    "TRUNCATE leaseq_bench.bare_items RESTART IDENTITY",
    "INSERT INTO leaseq_bench.bare_items (payload, visible_at) \
     SELECT '\\x00112233445566778899aabbccddeeff'::bytea, 'infinity' \
     FROM generate_series(1, 10000)",
    "ANALYZE leaseq_bench.bare_items",
    "DELETE FROM leaseq_bench.bare_items",
];

const PUSH_SQL: &str = "INSERT INTO leaseq_bench.bare_items (payload) \
                        SELECT * FROM unnest($1::bytea[])";

const ACK_SQL: &str = "DELETE FROM leaseq_bench.bare_items b \
                       USING unnest($1::bigint[], $2::bigint[]) AS a(id, lease) \
                       WHERE b.id = a.id AND b.lease = a.lease";

/// The claim statement for batches of up to `claim` items. The limit is written into the text
/// rather than bound, so that the planner sees the real limit in a generic plan too.
pub fn claim_sql(claim: usize) -> String {
    format!(
        "UPDATE leaseq_bench.bare_items \
         SET state = 1, lease = lease + 1, attempts = attempts + 1, \
             visible_at = clock_timestamp() + interval '30 seconds' \
         WHERE id = ANY(ARRAY( \
             SELECT id FROM leaseq_bench.bare_items \
             WHERE state = 0 AND visible_at <= clock_timestamp() \
             ORDER BY visible_at, id LIMIT {claim} \
             FOR UPDATE SKIP LOCKED)) \
         RETURNING id, lease, payload"
    )
}

/// What one [`run_bare`] measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BareReport {
    /// Items pushed, claimed and acked (each exactly once).
    pub items: u64,
    /// Wall time from just before the first push to the end of the last ack.
    pub elapsed: Duration,
    /// `items / elapsed`.
    pub items_per_sec: f64,
}

/// Opens a connection and drives it on a tokio task.
async fn connect(url: &str) -> Result<Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(async move {
        // An error here also fails the client's next call, which reports it.
        let _ = connection.await;
    });
    Ok(client)
}

/// What one worker saw.
#[derive(Default)]
struct WorkerTally {
    /// Items its claims returned.
    claimed: u64,
    /// Rows its acks deleted.
    acked: u64,
    /// Claimed items whose ack deleted no row.
    lost: u64,
    /// Claimed items whose lease was not 1, that is, delivered before.
    redelivered: u64,
    /// Payloads of the wrong size.
    bad_payloads: u64,
    /// When its last ack finished.
    last_ack: Option<Instant>,
}

/// State the tasks of one run share.
struct Shared {
    items: u64,
    /// The schema of the table (see [`run_bare_in`]).
    schema: String,
    /// Rows deleted by acks, across the workers.
    acked: AtomicU64,
    /// Set when a task fails or an ack loses items, so that the others stop instead of
    /// waiting for items that will never be acked.
    stop: AtomicBool,
}

impl Shared {
    fn running(&self) -> bool {
        !self.stop.load(Ordering::Acquire) && self.acked.load(Ordering::Acquire) < self.items
    }
}

/// The producer: prepares its statement, waits at `ready` for the workers, then pushes
/// `items` payloads in batches of up to [`PUSH_BATCH`]. Returns when it started pushing.
async fn produce(
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
async fn work(
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

/// Checks that the claim and the ack, planned as the workers will plan them, find their rows
/// through the indexes rather than by scanning the table. The claim has no parameters, so its
/// plan is the generic one every worker builds; the ack's is forced generic (the plan a
/// connection settles on after five executions).
///
/// # Panics
///
/// If either plan scans the table.
async fn check_plans(
    admin: &Client,
    claim: usize,
    schema: &str,
) -> Result<(), tokio_postgres::Error> {
    let ack_sql = in_schema(ACK_SQL, schema);
    admin
        .batch_execute(&format!(
            "SET plan_cache_mode = force_generic_plan; \
             PREPARE bare_ack(bigint[], bigint[]) AS {ack_sql}"
        ))
        .await?;
    let ack = "EXECUTE bare_ack(NULL, NULL)".to_owned();
    for (what, sql, index) in [
        (
            "claim",
            in_schema(&claim_sql(claim), schema),
            "bare_items_claim",
        ),
        ("ack", ack, "bare_items_pkey"),
    ] {
        let rows = admin.query(&format!("EXPLAIN {sql}"), &[]).await?;
        let plan: Vec<&str> = rows.iter().map(|r| r.get(0)).collect();
        let plan = plan.join("\n");
        assert!(
            plan.contains(index) && !plan.contains("Seq Scan on bare_items"),
            "the {what} would not use {index}:\n{plan}"
        );
    }
    admin
        .batch_execute("DEALLOCATE bare_ack; RESET plan_cache_mode")
        .await
}

/// Runs the bare SKIP LOCKED loop once: one producer pushes `items` items while `workers`
/// workers claim them `claim` at a time and ack each batch in one statement (see the module
/// docs for the statements). Uses `workers + 2` connections to `url` (a `key=value` string or
/// a `postgresql://` URL; no TLS): one to set the table up and check it, one for the
/// producer, one per worker.
///
/// Must be called inside a tokio runtime with the timer enabled; the tasks are spawned on it.
///
/// # Errors
///
/// The first error a connection or statement returned; the other tasks then stop.
///
/// # Panics
///
/// If `items`, `workers` or `claim` is 0, if the claim or the ack would scan the table instead
/// of using its index (see [`RESET_SQL`]), if a task panicked, or if the final check fails:
/// acks deleted a number of rows other than `items`, an item was claimed more than once or
/// with a payload of the wrong size, or rows are left in the table.
pub async fn run_bare(
    url: &str,
    items: u64,
    workers: usize,
    claim: usize,
) -> Result<BareReport, tokio_postgres::Error> {
    run_bare_in(url, "leaseq_bench", items, workers, claim).await
}

/// `sql` with its schema `leaseq_bench` replaced by `schema`.
fn in_schema(sql: &str, schema: &str) -> String {
    sql.replace("leaseq_bench", schema)
}

/// [`run_bare`] with the table in `schema` (created if missing, left in place), so that runs
/// in different schemas may overlap (sharing the server). `schema` must be a plain
/// identifier: lowercase ASCII letters, digits and `_`, not starting with a digit.
///
/// # Panics
///
/// As [`run_bare`], and if `schema` is not such an identifier.
pub async fn run_bare_in(
    url: &str,
    schema: &str,
    items: u64,
    workers: usize,
    claim: usize,
) -> Result<BareReport, tokio_postgres::Error> {
    assert!(
        items > 0 && workers > 0 && claim > 0,
        "items, workers and claim must be > 0"
    );
    let plain = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
    assert!(
        schema.chars().all(plain) && !schema.starts_with(|c: char| c.is_ascii_digit()),
        "schema {schema:?} is not a plain identifier"
    );
    let admin = connect(url).await?;
    admin.batch_execute(&in_schema(SETUP_SQL, schema)).await?;
    for sql in RESET_SQL {
        admin.batch_execute(&in_schema(sql, schema)).await?;
    }
    check_plans(&admin, claim, schema).await?;

    let producer = connect(url).await?;
    let mut worker_clients = Vec::with_capacity(workers);
    for _ in 0..workers {
        worker_clients.push(connect(url).await?);
    }

    let shared = Arc::new(Shared {
        items,
        schema: schema.to_owned(),
        acked: AtomicU64::new(0),
        stop: AtomicBool::new(false),
    });
    // The producer and the workers prepare their statements, then meet at `ready`: the clock
    // starts after that, at the producer's first push. Until the first batch commits, the
    // workers poll the empty table.
    let ready = Arc::new(Barrier::new(workers + 1));
    let mut handles = Vec::with_capacity(workers);
    for client in worker_clients {
        handles.push(tokio::spawn(work(
            client,
            claim,
            shared.clone(),
            ready.clone(),
        )));
    }
    let producer = tokio::spawn(produce(producer, shared.clone(), ready));

    let produced = producer.await.expect("the producer task panicked");
    let mut tallies = Vec::with_capacity(workers);
    let (start, mut first_error) = match produced {
        Ok(start) => (Some(start), None),
        Err(e) => (None, Some(e)),
    };
    for handle in handles {
        match handle.await.expect("a worker task panicked") {
            Ok(t) => tallies.push(t),
            Err(e) => first_error = first_error.or(Some(e)),
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let start = start.expect("no error, so the producer started");

    let end = tallies
        .iter()
        .filter_map(|t| t.last_ack)
        .max()
        .unwrap_or(start);
    let sum = |f: fn(&WorkerTally) -> u64| tallies.iter().map(f).sum::<u64>();
    let (claimed, acked, lost) = (sum(|t| t.claimed), sum(|t| t.acked), sum(|t| t.lost));
    let (redelivered, bad) = (sum(|t| t.redelivered), sum(|t| t.bad_payloads));
    let left: i64 = admin
        .query_one(
            &in_schema("SELECT count(*) FROM leaseq_bench.bare_items", schema),
            &[],
        )
        .await?
        .get(0);
    assert_eq!(
        (claimed, acked, lost, redelivered, bad, left),
        (items, items, 0, 0, 0, 0),
        "bare loop check failed: (claimed, acked, lost, redelivered, bad payloads, rows left)"
    );

    let elapsed = end - start;
    Ok(BareReport {
        items,
        elapsed,
        items_per_sec: items as f64 / elapsed.as_secs_f64(),
    })
}
