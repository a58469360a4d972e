//! Settling leases: the fenced statements. Acks of all workers of a process are batched
//! (by the settler task, `settler.rs`) into one `DELETE` per round trip, each matching its
//! fencing token (two when some rows have a graph node: the plain ones through the bare ack,
//! `ack_plain.rs`); nacks, dead letters and extensions run at once on a pooled connection. A
//! refused statement is explained by reading the row: taken over (`Redelivered`),
//! dead-lettered, gone, or run out.

use deadpool_postgres::Client;
use leaseq_async::SettleError;
use leaseq_core::{Acked, Failure, MessageId, Nacked, Reason, ReceiptError, Verdict};
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::board::Board;
use crate::counters::Counters;
use crate::db::{micros, pooled, Db};
use crate::leases::Leases;
use crate::outcome::{self, Decision, Fenced, RowNow};
use crate::pushes::Pushes;
use crate::settles::AckOp;
use crate::stale::{stale, why_stale};
use crate::ticket::PgTicket;

/// The parts a settle touches besides its statements, borrowed: the settings and pool,
/// the counters, the heartbeat's leases (a settled lease is let go), the writer's queue (a
/// removed row may make room for a waiting push: `capacity.rs`) and the claim board's
/// wake-up (an item made waiting again: the claimer looks).
pub(crate) struct Settling<'a, T: 'static> {
    pub(crate) db: &'a Db<T>,
    pub(crate) counters: &'a Counters,
    pub(crate) leases: &'a Leases,
    pub(crate) pushes: &'a Pushes,
    pub(crate) board: &'a Board<T>,
}

impl<T> Clone for Settling<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Settling<'_, T> {}

/// One `DELETE` for a batch of acks (two if some rows have a node: `ack_plain.rs`); each
/// caller gets its own result. The acks that could not
/// be settled come back with the error, to be tried again.
pub(crate) async fn ack_batch<T>(
    s: Settling<'_, T>,
    client: &Client,
    mut acks: Vec<AckOp>,
) -> Result<(), (tokio_postgres::Error, Vec<AckOp>)> {
    let (rows, failed) = crate::ack_plain::run(s.db, client, &mut acks).await;
    Counters::add(&s.counters.removed_since_vacuum, rows.len() as u64);
    if !rows.is_empty() {
        crate::capacity::removed(s.db, s.pushes);
        freed(s);
    }
    let (accepted, refused): (Vec<AckOp>, Vec<AckOp>) =
        acks.into_iter().partition(|a| rows.contains_key(&a.id));
    for a in accepted {
        let r = Ok(rows[&a.id]);
        count_ack(s.counters, &r);
        let _ = a.reply.send(r);
    }
    if let Some(e) = failed {
        return Err((e, refused));
    }
    if refused.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = refused.iter().map(|a| a.id).collect();
    let mut why = match why_stale(s.db, pooled(client), &ids).await {
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
        count_ack(s.counters, &r);
        let _ = a.reply.send(r);
    }
    Ok(())
}

/// Counts an ack's result.
pub(crate) fn count_ack(c: &Counters, r: &Result<Acked, SettleError>) {
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

/// A failed attempt (nack, timeout, panic, drop, release): the core's policy decides
/// between the backoff and the dead letters; one fenced statement applies it (retried, and
/// judged by its row, if its reply is lost: `outcome.rs`).
pub(crate) async fn fail<T>(
    s: Settling<'_, T>,
    client: &Client,
    ticket: PgTicket,
    failure: Failure,
) -> Result<Nacked, SettleError> {
    let db = s.db;
    s.leases.forget(&ticket);
    let expired = ticket
        .expires_at
        .is_some_and(|at| at <= leaseq_async::Runtime::now(&db.rt));
    let verdict =
        db.policy
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
                sql: &db.sql.retry,
                params: &params,
                holder_only: true,
            };
            let done = |r: &Row| Nacked::Retrying {
                visible_at: db.local_in(r.get::<_, Option<i64>>(0).unwrap_or(0)),
                attempts,
            };
            let decide = |row: Option<RowNow>| match row {
                Some(row) if mine(&row) => match row.state {
                    0 if row.reason == Some(reason) => Decision::Done(Nacked::Retrying {
                        visible_at: db.local_in(row.visible_us.unwrap_or(0)),
                        attempts,
                    }),
                    2 => Decision::Stale(ReceiptError::DeadLettered(mid(*id))),
                    // Put back by the rescuer, or still leased and run out.
                    _ => Decision::Stale(ReceiptError::LeaseExpired(mid(*id))),
                },
                _ => Decision::Unknown,
            };
            outcome::settle(db, s.counters, client, &ticket, f, done, decide).await
        }
        Verdict::DeadLetter { reason } => {
            let reason = i16::from(reason.code());
            let params: [&(dyn ToSql + Sync); 4] = [id, lease, &reason, &failure.error];
            let f = Fenced {
                what: "nack",
                sql: &db.sql.bury,
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
            outcome::settle(db, s.counters, client, &ticket, f, done, decide).await
        }
    };
    match &r {
        Ok(n) => {
            Counters::add(&s.counters.nacks, 1);
            match n {
                Nacked::DeadLettered { .. } => {
                    Counters::add(&s.counters.dead_lettered, 1);
                    crate::capacity::removed(db, s.pushes);
                    freed(s);
                }
                _ => {
                    s.board.wake.notify(usize::MAX);
                }
            }
        }
        Err(SettleError::Store(e)) => db.failed("nack", e),
        Err(_) => {}
    }
    r
}

/// Poison: straight to the dead letters (reason `Rejected`), even after the lease ran
/// out, unless someone claimed the item since.
pub(crate) async fn terminate<T>(
    s: Settling<'_, T>,
    client: &Client,
    ticket: PgTicket,
    error: String,
) -> Result<u32, SettleError> {
    let db = s.db;
    s.leases.forget(&ticket);
    let code = i16::from(Reason::Rejected.code());
    let error = Some(error);
    let params: [&(dyn ToSql + Sync); 4] = [&ticket.id, &ticket.lease, &code, &error];
    let f = Fenced {
        what: "dead letter",
        sql: &db.sql.terminate,
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
    let r = outcome::settle(db, s.counters, client, &ticket, f, done, decide).await;
    match &r {
        Ok(_) => {
            Counters::add(&s.counters.dead_lettered, 1);
            crate::capacity::removed(db, s.pushes);
            freed(s);
        }
        Err(SettleError::Store(e)) => db.failed("dead letter", e),
        Err(_) => {}
    }
    r
}

/// Leases settled for good (acked, dead-lettered): a flow claim this process's limit held
/// back waits for such a settle (the leases may have freed its slots, or a group's turn),
/// so the claimer looks at once instead of at its next poll (`flow_claim.rs`). A queue
/// without flow control pays one relaxed load: its claimer is not rung.
fn freed<T>(s: Settling<'_, T>) {
    if s.db.is_flowed() {
        s.board.wake.notify(usize::MAX);
    }
}

/// The message id of row `id`.
fn mid(id: i64) -> MessageId {
    MessageId::new(id as u64)
}
