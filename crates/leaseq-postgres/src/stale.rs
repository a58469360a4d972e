//! Why a fenced statement changed nothing, from its row as it is now: taken over
//! (`Redelivered`), dead-lettered, gone (`AlreadyAcked`), or run out (`LeaseExpired`). Read
//! by the settles (`settle.rs`), the judgement of a lost reply (`outcome.rs`) and `ack_in`
//! (`admin.rs`).

use std::collections::HashMap;

use deadpool_postgres::Client;
use leaseq_core::{MessageId, ReceiptError};
use tokio_postgres::GenericClient;

use crate::counters::Counters;
use crate::db::{pooled, run_on, Conn, Db};
use crate::ticket::PgTicket;

/// What the rows of refused leases say now: `(state, lease, deadline in us)` by id.
pub(crate) async fn why_stale<T, C: GenericClient + Sync>(
    db: &Db<T>,
    client: Conn<'_, C>,
    ids: &[i64],
) -> Result<HashMap<i64, (i16, i64, Option<i64>)>, tokio_postgres::Error> {
    let rows = run_on(client, &db.sql.why_stale, &[&ids]).await?;
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

/// Why a fenced statement on `ticket` changed nothing (an error if the row cannot be read:
/// no reason is then given, rather than a wrong one).
pub(crate) async fn explain<T>(
    db: &Db<T>,
    counters: &Counters,
    client: &Client,
    ticket: &PgTicket,
    holder_only: bool,
) -> Result<ReceiptError, tokio_postgres::Error> {
    let row = why_stale(db, pooled(client), &[ticket.id])
        .await?
        .remove(&ticket.id);
    let e = stale(ticket.id, ticket.lease, row, holder_only);
    if matches!(e, ReceiptError::Unknown) {
        Counters::add(&counters.unknown_receipts, 1);
    }
    Ok(e)
}
