//! Snooze ([`Store::snooze`](leaseq_async::Store::snooze)) on Postgres: a running lease put
//! back for a while without counting its attempt, within the queue's
//! [`Config::max_snoozes`](leaseq_core::Config::max_snoozes), the count kept in the row
//! (`items.snoozes`, schema step 11). The core's rule (`leaseq_core::Queue::snooze`), with
//! the rows as the truth: one fenced statement (`settle_sql::SNOOZE`) locks the lease's row
//! and, below the bound, makes it waiting again after the delay with its attempt taken back;
//! at the bound it changes nothing and the snooze is counted as a failed attempt (reason
//! `Released`, error "snooze limit reached", retried after the delay or dead-lettered) by
//! the nack's own statement (`settle::fail`).
//!
//! A lost reply is judged as every settle's (`outcome.rs`): the statement is run again
//! (fenced: it matches the lease and the running state), and if that changes nothing the
//! row says it: waiting again under this lease with the attempt taken back is this snooze
//! (done); still running under this lease, not made; anything else, outcome unknown. Never
//! a wrong `Ok`.

use std::time::Duration;

use deadpool_postgres::Client;
use leaseq_async::SettleError;
use leaseq_core::{Failure, MessageId, Reason, ReceiptError, Snoozed};
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::counters::Counters;
use crate::db::micros;
use crate::outcome::{self, Decision, Fenced, RowNow};
use crate::settle::Settling;
use crate::ticket::PgTicket;

/// What the snooze statement came to.
enum Snoozing {
    /// Put back uncounted.
    Later(Snoozed),
    /// The item's snoozes are at the bound: nothing changed, the lease still running.
    AtBound,
}

/// The snooze of `ticket` for `delay` (see the file's header).
pub(crate) async fn snooze<T>(
    s: Settling<'_, T>,
    client: &Client,
    ticket: PgTicket,
    delay: Duration,
) -> Result<Snoozed, SettleError> {
    let db = s.db;
    let max = i32::try_from(db.config.max_snoozes()).unwrap_or(i32::MAX);
    let params: [&(dyn ToSql + Sync); 4] = [&ticket.id, &ticket.lease, &micros(delay), &max];
    let f = Fenced {
        what: "snooze",
        sql: &db.sql.snooze,
        params: &params,
        holder_only: true,
    };
    let done = |r: &Row| match (r.get::<_, Option<i32>>(1), r.get::<_, Option<i64>>(2)) {
        (Some(n), Some(us)) => Snoozing::Later(Snoozed::Later {
            visible_at: db.local_in(us),
            snoozes: u32::try_from(n).unwrap_or(0),
        }),
        _ => Snoozing::AtBound,
    };
    let taken_back = i32::try_from(ticket.attempts).unwrap_or(i32::MAX) - 1;
    let decide = |row: Option<RowNow>| match row {
        Some(row) if row.lease == ticket.lease => match row.state {
            // Waiting again under this lease with its attempt taken back: only a snooze of
            // this lease does that (a put-back is for a lease never handed out).
            0 if row.attempts == taken_back && row.snoozes > 0 => {
                Decision::Done(Snoozing::Later(Snoozed::Later {
                    visible_at: db.local_in(row.visible_us.unwrap_or(0)),
                    snoozes: u32::try_from(row.snoozes).unwrap_or(0),
                }))
            }
            // Still running yet the statement found no running lease: no reason is known.
            1 if row.deadline_us.is_some_and(|us| us >= 0) => Decision::Unknown,
            2 => Decision::Stale(ReceiptError::DeadLettered(MessageId::new(ticket.id as u64))),
            _ => Decision::Stale(ReceiptError::LeaseExpired(MessageId::new(ticket.id as u64))),
        },
        _ => Decision::Unknown,
    };
    let r = outcome::settle(db, s.counters, client, &ticket, f, done, decide).await;
    match r {
        Ok(Snoozing::Later(snoozed)) => {
            s.leases.forget(&ticket);
            Counters::add(&s.counters.snoozed, 1);
            s.board.wake.notify(usize::MAX);
            Ok(snoozed)
        }
        Ok(Snoozing::AtBound) => {
            let failure = Failure::with_reason(Reason::Released)
                .and_error("snooze limit reached")
                .retry_after(delay);
            crate::settle::fail(s, client, ticket, failure)
                .await
                .map(Snoozed::Counted)
        }
        Err(e) => {
            s.leases.forget(&ticket);
            if let SettleError::Store(e) = &e {
                db.failed("snooze", e);
            }
            Err(e)
        }
    }
}

impl<T: Clone + Send + Sync + 'static> crate::store::PgStore<T> {
    /// [`Store::snooze`](leaseq_async::Store::snooze) on a pooled connection.
    pub(crate) async fn snooze_lease(
        &self,
        ticket: PgTicket,
        delay: Duration,
    ) -> Result<Snoozed, SettleError> {
        let client = match self.db.client().await {
            Ok(c) => c,
            Err(e) => {
                // Nothing was sent: the snooze was not made.
                let error = leaseq_async::StoreError::not_done(format!(
                    "snooze: no connection: {}",
                    leaseq_async::ErrorChain(&e)
                ));
                self.db.failed("snooze", e);
                self.leases.forget(&ticket);
                return Err(error.into());
            }
        };
        snooze(self.settler.parts(), &client, ticket, delay).await
    }
}
