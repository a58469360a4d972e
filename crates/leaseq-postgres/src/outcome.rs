//! What a settle whose statement failed really did. A statement refused by the server (an
//! `ERROR`: rolled back) or never sent (no connection, its prepare failed) was not made. One
//! whose reply never came (the connection reset or closed after it was sent, a `FATAL`) may
//! have been: the fenced statement is run again on another connection (safe: it matches the
//! lease and the state it moves the row from), and if that changes nothing the row, read by
//! id, says what happened: moved as ours would move it (done), still ours to move (not done),
//! or gone, or leased again since (outcome unknown, typed). Never a wrong definite answer.

use std::time::Duration;

use deadpool_postgres::Client;
use leaseq_async::{SettleError, StoreError};
use leaseq_core::ReceiptError;
use tokio_postgres::error::Severity;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::counters::Counters;
use crate::db::{pooled, run_on, Db};
use crate::stale::explain;
use crate::ticket::PgTicket;

/// Tries of one settle statement (the first included) before its error is returned.
const TRIES: u32 = 3;

/// The pause before a retry, times the number of tries so far.
const PAUSE: Duration = Duration::from_millis(20);

/// Whether a failed statement may have been made: anything but the server's own `ERROR`
/// (which rolls the statement back) leaves it open, since the reply may be what was lost.
pub(crate) fn maybe_made(e: &tokio_postgres::Error) -> bool {
    e.as_db_error()
        .is_none_or(|db| db.parsed_severity() != Some(Severity::Error))
}

/// A row as a re-read finds it: `state`, fencing token, `reason`, `attempts`, `snoozes`, and
/// microseconds until its `deadline` and its `visible_at`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowNow {
    pub(crate) state: i16,
    pub(crate) lease: i64,
    pub(crate) reason: Option<i16>,
    pub(crate) attempts: i32,
    /// Uncounted snoozes so far.
    pub(crate) snoozes: i32,
    pub(crate) deadline_us: Option<i64>,
    pub(crate) visible_us: Option<i64>,
}

/// What a settle came to, judged from its row after a reply was lost.
#[derive(Debug)]
pub(crate) enum Decision<O> {
    /// The row moved as the settle moves it.
    Done(O),
    /// The settle was not made, and cannot be now (the receipt's typed reason).
    Stale(ReceiptError),
    /// The row is gone, or leased again: the settle may or may not have been made.
    Unknown,
}

/// One fenced statement that changes at most one row, for a settle.
pub(crate) struct Fenced<'a> {
    /// The operation, for errors ("nack", "dead letter", "extend").
    pub(crate) what: &'static str,
    pub(crate) sql: &'a str,
    pub(crate) params: &'a [&'a (dyn ToSql + Sync)],
    /// Whether only the holder's live lease may be settled (explaining a refusal).
    pub(crate) holder_only: bool,
}

/// Runs `f` for `ticket` (on `client`, then on fresh pooled connections) until it answers:
/// its row (`done` reads the result from it), a refusal explained by the row, or, after a
/// reply that may have been lost, what `decide` makes of the row. Errors are typed: not
/// done when no try may have been made, outcome unknown otherwise.
pub(crate) async fn settle<T, O>(
    db: &Db<T>,
    counters: &Counters,
    client: &Client,
    ticket: &PgTicket,
    f: Fenced<'_>,
    done: impl Fn(&Row) -> O,
    decide: impl Fn(Option<RowNow>) -> Decision<O>,
) -> Result<O, SettleError> {
    let mut fresh: Option<Client> = None;
    let mut sent = false;
    let mut last = String::new();
    for tried in 0..TRIES {
        if tried > 0 {
            tokio::time::sleep(PAUSE * tried).await;
            match db.client().await {
                Ok(c) => fresh = Some(c),
                Err(e) => {
                    last = leaseq_async::ErrorChain(&e).to_string();
                    continue;
                }
            }
        }
        let c = fresh.as_ref().unwrap_or(client);
        match run_on(pooled(c), f.sql, f.params).await {
            Ok(rows) => match rows.into_iter().next() {
                Some(row) => return Ok(done(&row)),
                // Refused, and no earlier try may have been made: stale, for the reason
                // the row gives (not done if it cannot be read).
                None if !sent => {
                    return Err(
                        match explain(db, counters, c, ticket, f.holder_only).await {
                            Ok(e) => SettleError::Stale(e),
                            Err(e) => SettleError::Store(StoreError::not_done(format!(
                                "{}: refused, and the row could not be read: {}",
                                f.what,
                                leaseq_async::ErrorChain(&e)
                            ))),
                        },
                    )
                }
                None => match reread(db, c, ticket.id).await {
                    Ok(row) => {
                        return match decide(row) {
                            Decision::Done(o) => Ok(o),
                            Decision::Stale(e) => Err(SettleError::Stale(e)),
                            Decision::Unknown => Err(SettleError::Store(unknown(f.what, &last))),
                        }
                    }
                    Err(e) => {
                        db.failed(f.what, &e);
                        last = leaseq_async::ErrorChain(&e).to_string();
                    }
                },
            },
            Err(e) => {
                db.failed(f.what, &e);
                sent |= maybe_made(&e);
                last = leaseq_async::ErrorChain(&e).to_string();
            }
        }
    }
    Err(SettleError::Store(if sent {
        unknown(f.what, &last)
    } else {
        StoreError::not_done(format!("{}: {last}", f.what))
    }))
}

/// The outcome-unknown error of an operation.
pub(crate) fn unknown(what: &str, last: &str) -> StoreError {
    StoreError::outcome_unknown(format!(
        "{what}: the reply was lost ({last}) and the row no longer tells whether it was made"
    ))
}

/// Reads the row `id` as it is now (`None`: gone).
pub(crate) async fn reread<T>(
    db: &Db<T>,
    client: &Client,
    id: i64,
) -> Result<Option<RowNow>, tokio_postgres::Error> {
    let rows = run_on(pooled(client), &db.sql.reread, &[&id]).await?;
    Ok(rows.first().map(|r| RowNow {
        state: r.get(0),
        lease: r.get(1),
        reason: r.get(2),
        attempts: r.get(3),
        snoozes: r.get(4),
        deadline_us: r.get(5),
        visible_us: r.get(6),
    }))
}
