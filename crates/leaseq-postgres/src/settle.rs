//! Settling leases: the fenced statements. Acks of all workers of a process are batched
//! (by the settler task, `settler.rs`) into one `DELETE` per round trip, each matching its
//! fencing token; nacks, dead letters and extensions run at once on a pooled connection. A
//! refused statement is explained by reading the row: taken over (`Redelivered`),
//! dead-lettered, gone, or run out.

use std::collections::HashMap;
use std::time::Duration;

use deadpool_postgres::Client;
use leaseq_core::{Acked, Failure, MessageId, Nacked, Reason, ReceiptError, Verdict};
use tokio::sync::oneshot;
use tokio_postgres::types::ToSql;
use tokio_postgres::{GenericClient, Row};

use crate::counters::Counters;
use crate::store::{micros, PgTicket, Shared};

/// An ack waiting for the settler.
pub(crate) struct AckOp {
    pub(crate) id: i64,
    pub(crate) lease: i64,
    pub(crate) reply: oneshot::Sender<Result<Acked, ReceiptError>>,
}

/// What waits for the settler.
#[derive(Default)]
pub(crate) struct SettleQueue {
    pub(crate) acks: Vec<AckOp>,
    pub(crate) hand_backs: Vec<PgTicket>,
    /// Leases claimed for receives that went away before taking them: `(id, lease)`.
    pub(crate) unclaims: Vec<(i64, i64)>,
}

/// One `DELETE` for a batch of acks; each caller gets its own result.
pub(crate) async fn ack_batch<T>(
    shared: &Shared<T>,
    client: &Client,
    acks: Vec<AckOp>,
) -> Result<(), (tokio_postgres::Error, Vec<AckOp>)> {
    let ids: Vec<i64> = acks.iter().map(|a| a.id).collect();
    let leases: Vec<i64> = acks.iter().map(|a| a.lease).collect();
    let rows = match ack_rows(shared, pooled(client), &ids, &leases).await {
        Ok(rows) => rows,
        Err(e) => return Err((e, acks)),
    };
    let refused: Vec<usize> = (0..acks.len())
        .filter(|i| !rows.contains_key(&ids[*i]))
        .collect();
    let mut why = if refused.is_empty() {
        HashMap::new()
    } else {
        let ids: Vec<i64> = refused.iter().map(|i| ids[*i]).collect();
        match why_stale(shared, pooled(client), &ids).await {
            Ok(why) => why,
            Err(e) => return Err((e, acks)),
        }
    };
    Counters::add(&shared.counters.removed_since_vacuum, rows.len() as u64);
    for a in acks {
        let r = match rows.get(&a.id) {
            Some(r) => Ok(*r),
            None => Err(stale(a.id, a.lease, why.remove(&a.id), false)),
        };
        count_ack(shared, &r);
        let _ = a.reply.send(r);
    }
    Ok(())
}

/// Runs `q`, one of this crate's statements, on a pooled connection (prepared once per
/// connection) or on the caller's own client or transaction (prepared each time).
pub(crate) async fn run_on<C: GenericClient + Sync>(
    client: Conn<'_, C>,
    q: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, tokio_postgres::Error> {
    match client {
        Conn::Pooled(c) => {
            let stmt = c.prepare_cached(q).await?;
            c.query(&stmt, params).await
        }
        Conn::Caller(c) => c.query(q, params).await,
    }
}

/// A connection a statement runs on: pooled, or the caller's (its own transaction).
pub(crate) enum Conn<'a, C> {
    /// One of the store's pooled connections.
    Pooled(&'a Client),
    /// The caller's client or transaction.
    Caller(&'a C),
}

impl<C> Clone for Conn<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C> Copy for Conn<'_, C> {}

/// Runs the fenced delete; the accepted acks by id.
pub(crate) async fn ack_rows<T, C: GenericClient + Sync>(
    shared: &Shared<T>,
    client: Conn<'_, C>,
    ids: &[i64],
    leases: &[i64],
) -> Result<HashMap<i64, Acked>, tokio_postgres::Error> {
    let rows = run_on(client, &shared.sql.ack, &[&ids, &leases]).await?;
    Ok(rows
        .iter()
        .map(|r| {
            let id: i64 = r.get(0);
            let state: i16 = r.get(1);
            let late_us: i64 = r.get::<_, Option<i64>>(2).unwrap_or(0);
            let acked = if state == 1 && late_us <= 0 {
                Acked::OnTime
            } else {
                Acked::LateUnclaimed {
                    late_by: Duration::from_micros(late_us.max(0) as u64),
                }
            };
            (id, acked)
        })
        .collect())
}

/// Counts an ack's result.
pub(crate) fn count_ack<T>(shared: &Shared<T>, r: &Result<Acked, ReceiptError>) {
    let c = &shared.counters;
    match r {
        Ok(Acked::OnTime) => Counters::add(&c.acked, 1),
        Ok(_) => {
            Counters::add(&c.acked, 1);
            Counters::add(&c.late_acks_unclaimed, 1);
        }
        // Stale the way the core counts it (`late_acks_stale`): an ack whose row is gone
        // (acked by the item's next holder, or cancelled) reads `AlreadyAcked`, as the
        // core says after a redelivery's ack.
        Err(
            ReceiptError::Redelivered(_)
            | ReceiptError::DeadLettered(_)
            | ReceiptError::AlreadyAcked(_)
            | ReceiptError::Released(_)
            | ReceiptError::Cancelled(_),
        ) => Counters::add(&c.late_acks_stale, 1),
        Err(_) => Counters::add(&c.unknown_receipts, 1),
    }
}

/// What the rows of refused leases say now: `(state, lease, deadline in us)` by id.
pub(crate) async fn why_stale<T, C: GenericClient + Sync>(
    shared: &Shared<T>,
    client: Conn<'_, C>,
    ids: &[i64],
) -> Result<HashMap<i64, (i16, i64, Option<i64>)>, tokio_postgres::Error> {
    let rows = run_on(client, &shared.sql.why_stale, &[&ids]).await?;
    Ok(rows
        .iter()
        .map(|r| (r.get(0), (r.get(1), r.get(2), r.get(3))))
        .collect())
}

/// The typed reason a statement on lease `(id, lease)` changed nothing, from its row now.
pub(crate) fn stale(
    id: i64,
    lease: i64,
    row: Option<(i16, i64, Option<i64>)>,
    holder_only: bool,
) -> ReceiptError {
    let mid = MessageId::new(id as u64);
    match row {
        None => ReceiptError::AlreadyAcked(mid),
        Some((2, l, _)) if l == lease => ReceiptError::DeadLettered(mid),
        Some((_, l, _)) if l > lease => ReceiptError::Redelivered(mid),
        Some((2, _, _)) => ReceiptError::DeadLettered(mid),
        // Still this lease, but run out (or put back by the rescuer): only an ack or a dead
        // letter are still taken.
        Some((_, l, _)) if l == lease && holder_only => ReceiptError::LeaseExpired(mid),
        Some(_) => ReceiptError::Unknown,
    }
}

/// A failed attempt (nack, timeout, panic, drop, release): the core's policy decides
/// between the backoff and the dead letters; one fenced statement applies it.
pub(crate) async fn fail<T>(
    shared: &Shared<T>,
    client: &Client,
    ticket: PgTicket,
    failure: Failure,
) -> Result<Nacked, ReceiptError> {
    forget(shared, &ticket);
    let expired = ticket
        .expires_at
        .is_some_and(|at| at <= leaseq_async::Runtime::now(&shared.rt));
    let verdict =
        shared
            .policy
            .lock()
            .after_failure(ticket.attempts, expired, failure.reason, failure.retry);
    let (id, lease, attempts) = (&ticket.id, &ticket.lease, ticket.attempts);
    let r = match verdict {
        Verdict::Retry { delay } => {
            let reason = i16::from(failure.reason.code());
            let params: [&(dyn ToSql + Sync); 5] =
                [id, lease, &micros(delay), &reason, &failure.error];
            fenced(client, &shared.sql.retry, &params).await.map(|row| {
                row.map(|r| Nacked::Retrying {
                    visible_at: shared.local_in(r.get::<_, Option<i64>>(0).unwrap_or(0)),
                    attempts,
                })
            })
        }
        Verdict::DeadLetter { reason } => {
            let reason = i16::from(reason.code());
            let params: [&(dyn ToSql + Sync); 4] = [id, lease, &reason, &failure.error];
            fenced(client, &shared.sql.bury, &params)
                .await
                .map(|row| row.map(|_| Nacked::DeadLettered { attempts }))
        }
    };
    match r {
        Ok(Some(n)) => {
            Counters::add(&shared.counters.nacks, 1);
            match n {
                Nacked::DeadLettered { .. } => Counters::add(&shared.counters.dead_lettered, 1),
                _ => {
                    shared.claim_wake.notify(usize::MAX);
                }
            }
            Ok(n)
        }
        Ok(None) => Err(explain(shared, client, &ticket, true).await),
        Err(e) => {
            shared.failed("nack", &e);
            // The lease runs out and the item comes back then, its attempt counted.
            Err(ReceiptError::LeaseExpired(MessageId::new(ticket.id as u64)))
        }
    }
}

/// Poison: straight to the dead letters (reason `Terminated`), even after the lease ran
/// out, unless someone claimed the item since.
pub(crate) async fn terminate<T>(
    shared: &Shared<T>,
    client: &Client,
    ticket: PgTicket,
    error: String,
) -> Result<u32, ReceiptError> {
    forget(shared, &ticket);
    let code = i16::from(Reason::Terminated.code());
    let params: [&(dyn ToSql + Sync); 4] = [&ticket.id, &ticket.lease, &code, &Some(error)];
    let r = fenced(client, &shared.sql.terminate, &params).await;
    match r {
        Ok(Some(row)) => {
            Counters::add(&shared.counters.dead_lettered, 1);
            Ok(u32::try_from(row.get::<_, i32>(0)).unwrap_or(0))
        }
        Ok(None) => Err(explain(shared, client, &ticket, false).await),
        Err(e) => {
            shared.failed("dead letter", &e);
            Err(ReceiptError::LeaseExpired(MessageId::new(ticket.id as u64)))
        }
    }
}

/// Runs a fenced statement that changes at most one row; the row it returned, if any.
async fn fenced(
    client: &Client,
    q: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Option<Row>, tokio_postgres::Error> {
    Ok(run_on(pooled(client), q, params).await?.into_iter().next())
}

/// Why a fenced statement on `ticket` changed nothing.
pub(crate) async fn explain<T>(
    shared: &Shared<T>,
    client: &Client,
    ticket: &PgTicket,
    holder_only: bool,
) -> ReceiptError {
    let row = why_stale(shared, pooled(client), &[ticket.id])
        .await
        .ok()
        .and_then(|mut m| m.remove(&ticket.id));
    let e = stale(ticket.id, ticket.lease, row, holder_only);
    if matches!(e, ReceiptError::Unknown) {
        Counters::add(&shared.counters.unknown_receipts, 1);
    }
    e
}

/// The heartbeat lets go of a lease that is being settled.
pub(crate) fn forget<T>(shared: &Shared<T>, ticket: &PgTicket) {
    if ticket.beat.is_some() {
        shared.held.lock().remove(&ticket.id);
    }
}

/// A pooled connection as a [`Conn`].
pub(crate) fn pooled(client: &Client) -> Conn<'_, tokio_postgres::Client> {
    Conn::Pooled(client)
}
