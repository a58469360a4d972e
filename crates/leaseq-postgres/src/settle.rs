//! Settling leases: the fenced statements. Acks of all workers of a process are batched
//! (by the settler task, `settler.rs`) into one `DELETE` per round trip, each matching its
//! fencing token; nacks, dead letters and extensions run at once on a pooled connection. A
//! refused statement is explained by reading the row: taken over (`Redelivered`),
//! dead-lettered, gone, or run out.

use std::collections::HashMap;
use std::time::Duration;

use deadpool_postgres::Client;
use leaseq_async::SettleError;
use leaseq_core::{Acked, Failure, MessageId, Nacked, Reason, ReceiptError, Verdict};
use tokio::sync::oneshot;
use tokio_postgres::types::ToSql;
use tokio_postgres::{GenericClient, Row};

use crate::counters::Counters;
use crate::outcome::{self, Decision, Fenced, RowNow};
use crate::store::{micros, PgTicket, Shared};

/// An ack waiting for the settler.
pub(crate) struct AckOp {
    pub(crate) id: i64,
    pub(crate) lease: i64,
    /// An earlier try of this ack may have been made (its reply was lost): a refusal with
    /// the row gone is then no proof that someone else removed it.
    pub(crate) resent: bool,
    /// When the ack was queued (it gives up after `Options::commit_timeout` of failures).
    pub(crate) since: std::time::Instant,
    pub(crate) reply: oneshot::Sender<Result<Acked, SettleError>>,
}

/// What waits for the settler.
#[derive(Default)]
pub(crate) struct SettleQueue {
    pub(crate) acks: Vec<AckOp>,
    pub(crate) hand_backs: Vec<PgTicket>,
    /// Leases claimed for receives that went away before taking them: `(id, lease)`.
    pub(crate) unclaims: Vec<(i64, i64)>,
    /// Leases delivered and given back unstarted (`Store::put_back`): `(id, lease)`.
    pub(crate) put_backs: Vec<(i64, i64)>,
}

/// One `DELETE` for a batch of acks; each caller gets its own result. The acks that could
/// not be settled come back with the error, to be tried again.
pub(crate) async fn ack_batch<T>(
    shared: &Shared<T>,
    client: &Client,
    mut acks: Vec<AckOp>,
) -> Result<(), (tokio_postgres::Error, Vec<AckOp>)> {
    let ids: Vec<i64> = acks.iter().map(|a| a.id).collect();
    let leases: Vec<i64> = acks.iter().map(|a| a.lease).collect();
    let rows = match ack_rows(shared, pooled(client), &ids, &leases).await {
        Ok(rows) => rows,
        Err(e) => {
            let sent = outcome::maybe_made(&e);
            for a in &mut acks {
                a.resent |= sent;
            }
            return Err((e, acks));
        }
    };
    Counters::add(&shared.counters.removed_since_vacuum, rows.len() as u64);
    if !rows.is_empty() {
        crate::capacity::removed(shared);
    }
    let (accepted, refused): (Vec<AckOp>, Vec<AckOp>) =
        acks.into_iter().partition(|a| rows.contains_key(&a.id));
    for a in accepted {
        let r = Ok(rows[&a.id]);
        count_ack(shared, &r);
        let _ = a.reply.send(r);
    }
    if refused.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = refused.iter().map(|a| a.id).collect();
    let mut why = match why_stale(shared, pooled(client), &ids).await {
        Ok(why) => why,
        // Refused for certain: asked again, they are refused again and explained then.
        Err(e) => return Err((e, refused)),
    };
    for a in refused {
        let r = match why.remove(&a.id) {
            // Gone: acked by this ack's lost try, or by someone else, or cancelled.
            None if a.resent => Err(SettleError::Store(outcome::unknown("ack", "row gone"))),
            // Present: this ack was never made (a removed row never comes back: ids are
            // never inserted twice).
            row => Err(SettleError::Stale(stale(a.id, a.lease, row, false))),
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
pub(crate) fn count_ack<T>(shared: &Shared<T>, r: &Result<Acked, SettleError>) {
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
        Err(SettleError::Stale(
            ReceiptError::Redelivered(_)
            | ReceiptError::DeadLettered(_)
            | ReceiptError::AlreadyAcked(_)
            | ReceiptError::Released(_)
            | ReceiptError::Cancelled(_),
        )) => Counters::add(&c.late_acks_stale, 1),
        Err(SettleError::Stale(_)) => Counters::add(&c.unknown_receipts, 1),
        Err(_) => {}
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
/// between the backoff and the dead letters; one fenced statement applies it (retried, and
/// judged by its row, if its reply is lost: `outcome.rs`).
pub(crate) async fn fail<T>(
    shared: &Shared<T>,
    client: &Client,
    ticket: PgTicket,
    failure: Failure,
) -> Result<Nacked, SettleError> {
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
    let mine = |row: &RowNow| row.lease == ticket.lease;
    let r = match verdict {
        Verdict::Retry { delay } => {
            let reason = i16::from(failure.reason.code());
            let params: [&(dyn ToSql + Sync); 5] =
                [id, lease, &micros(delay), &reason, &failure.error];
            let f = Fenced {
                what: "nack",
                sql: &shared.sql.retry,
                params: &params,
                holder_only: true,
            };
            let done = |r: &Row| Nacked::Retrying {
                visible_at: shared.local_in(r.get::<_, Option<i64>>(0).unwrap_or(0)),
                attempts,
            };
            let decide = |row: Option<RowNow>| match row {
                Some(row) if mine(&row) => match row.state {
                    0 if row.reason == Some(reason) => Decision::Done(Nacked::Retrying {
                        visible_at: shared.local_in(row.visible_us.unwrap_or(0)),
                        attempts,
                    }),
                    2 => Decision::Stale(ReceiptError::DeadLettered(mid(*id))),
                    // Put back by the rescuer, or still leased and run out.
                    _ => Decision::Stale(ReceiptError::LeaseExpired(mid(*id))),
                },
                _ => Decision::Unknown,
            };
            outcome::settle(shared, client, &ticket, f, done, decide).await
        }
        Verdict::DeadLetter { reason } => {
            let reason = i16::from(reason.code());
            let params: [&(dyn ToSql + Sync); 4] = [id, lease, &reason, &failure.error];
            let f = Fenced {
                what: "nack",
                sql: &shared.sql.bury,
                params: &params,
                holder_only: true,
            };
            let done = |_: &Row| Nacked::DeadLettered { attempts };
            let decide = |row: Option<RowNow>| match row {
                Some(row) if mine(&row) => match row.state {
                    2 if row.reason == Some(reason) => {
                        Decision::Done(Nacked::DeadLettered { attempts })
                    }
                    2 => Decision::Stale(ReceiptError::DeadLettered(mid(*id))),
                    _ => Decision::Stale(ReceiptError::LeaseExpired(mid(*id))),
                },
                _ => Decision::Unknown,
            };
            outcome::settle(shared, client, &ticket, f, done, decide).await
        }
    };
    match &r {
        Ok(n) => {
            Counters::add(&shared.counters.nacks, 1);
            match n {
                Nacked::DeadLettered { .. } => {
                    Counters::add(&shared.counters.dead_lettered, 1);
                    crate::capacity::removed(shared);
                }
                _ => {
                    shared.claim_wake.notify(usize::MAX);
                }
            }
        }
        Err(SettleError::Store(e)) => shared.failed("nack", e),
        Err(_) => {}
    }
    r
}

/// Poison: straight to the dead letters (reason `Rejected`), even after the lease ran
/// out, unless someone claimed the item since.
pub(crate) async fn terminate<T>(
    shared: &Shared<T>,
    client: &Client,
    ticket: PgTicket,
    error: String,
) -> Result<u32, SettleError> {
    forget(shared, &ticket);
    let code = i16::from(Reason::Rejected.code());
    let error = Some(error);
    let params: [&(dyn ToSql + Sync); 4] = [&ticket.id, &ticket.lease, &code, &error];
    let f = Fenced {
        what: "dead letter",
        sql: &shared.sql.terminate,
        params: &params,
        holder_only: false,
    };
    let done = |row: &Row| u32::try_from(row.get::<_, i32>(0)).unwrap_or(0);
    let decide = |row: Option<RowNow>| match row {
        Some(row) if row.lease == ticket.lease => match row.state {
            2 if row.reason == Some(code) => {
                Decision::Done(u32::try_from(row.attempts).unwrap_or(0))
            }
            2 => Decision::Stale(ReceiptError::DeadLettered(mid(ticket.id))),
            // Waiting or leased with this token, yet the statement refused: no reason is
            // known for it.
            _ => Decision::Unknown,
        },
        _ => Decision::Unknown,
    };
    let r = outcome::settle(shared, client, &ticket, f, done, decide).await;
    match &r {
        Ok(_) => {
            Counters::add(&shared.counters.dead_lettered, 1);
            crate::capacity::removed(shared);
        }
        Err(SettleError::Store(e)) => shared.failed("dead letter", e),
        Err(_) => {}
    }
    r
}

/// The message id of row `id`.
fn mid(id: i64) -> MessageId {
    MessageId::new(id as u64)
}

/// Why a fenced statement on `ticket` changed nothing (an error if the row cannot be read:
/// no reason is then given, rather than a wrong one).
pub(crate) async fn explain<T>(
    shared: &Shared<T>,
    client: &Client,
    ticket: &PgTicket,
    holder_only: bool,
) -> Result<ReceiptError, tokio_postgres::Error> {
    let row = why_stale(shared, pooled(client), &[ticket.id])
        .await?
        .remove(&ticket.id);
    let e = stale(ticket.id, ticket.lease, row, holder_only);
    if matches!(e, ReceiptError::Unknown) {
        Counters::add(&shared.counters.unknown_receipts, 1);
    }
    Ok(e)
}

/// The heartbeat lets go of a lease that is being settled: this lease only. A stale holder
/// settling late must not stop the heartbeat of the item's next lease, taken by this same
/// process meanwhile (the map is by row id; that lease then ran out under its holder: the
/// kill -9 test caught it).
pub(crate) fn forget<T>(shared: &Shared<T>, ticket: &PgTicket) {
    if ticket.beat.is_some() {
        let mut held = shared.held.lock();
        if held
            .get(&ticket.id)
            .is_some_and(|h| h.lease == ticket.lease)
        {
            held.remove(&ticket.id);
        }
    }
}

/// A pooled connection as a [`Conn`].
pub(crate) fn pooled(client: &Client) -> Conn<'_, tokio_postgres::Client> {
    Conn::Pooled(client)
}
