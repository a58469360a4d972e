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

mod sql;
mod tasks;

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Barrier;
use tokio_postgres::{Client, NoTls};

use sql::{check_plans, in_schema};
pub use sql::{claim_sql, RESET_SQL, SETUP_SQL};
use tasks::{produce, work, Shared, WorkerTally};

/// The largest batch the producer inserts in one statement.
pub const PUSH_BATCH: usize = 256;

/// The size of every payload, in bytes.
pub const PAYLOAD_BYTES: usize = 16;

/// How long a worker sleeps after a claim that found nothing, before it claims again.
pub const EMPTY_POLL: Duration = Duration::from_millis(1);

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
