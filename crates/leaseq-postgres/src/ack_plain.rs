//! A plain ack pays nothing for the graph (issues 32/33's cost goal for jobs without
//! dependencies). Since schema step 13 the ack tells the graph in its own statement
//! (`graph_told.rs`'s `told`): its rows' nodes returned and aggregated, about 0.8 us of
//! server CPU per plain item (BENCHMARKS.md, Round 9). The plain claim already reads each
//! row, so it returns whether the row has a node (and so do the flow claims since schema
//! step 21, `flow_plain_sql.rs`) ([`PgTicket::plain`](crate::ticket::PgTicket));
//! the settler sends the acks of rows claimed without one to [`bare`]'s statement (the ack
//! as it was before the graph, windowed keys still kept, the record of finished jobs still
//! written) and the rest to the told one.
//!
//! **The flag is a hint; the statement decides.** A node is set on an existing row only by
//! `graph_adopt` (a plain message made a job's parent, `graph_sql.rs`), possibly after its
//! claim. The bare ack deletes only rows with `node IS NULL` (a concurrent adoption's update
//! is waited for and the condition judged again on the row it wrote), and every ack it did
//! not delete is tried again, in the same batch, by the told statement ([`run`]), which
//! accepts or refuses it as it always did. So a row with a node is never deleted untold.
//!
//! [`ack_rows`] runs either statement (and the admin's `ack_in`) and reads what it accepted.

use std::collections::HashMap;
use std::time::Duration;

use deadpool_postgres::Client;
use leaseq_core::Acked;
use tokio_postgres::GenericClient;

use crate::db::{pooled, run_on, Conn, Db};
use crate::outcome;
use crate::settles::AckOp;

/// Where the ack (`Sql::ack`, as `Sql::new` and the record of finished jobs wrote it) names
/// the rows it deletes; the bare ack adds its condition there.
const ANCHOR: &str = "WHERE i.id = ANY($1::bigint[])";

/// `ack` deleting only rows without a node: the statement the graph would wrap, restricted
/// to rows it has nothing to tell about. Empty (no bare ack: every ack told) if `ack` does
/// not name its rows as [`ANCHOR`] says (a test fails then).
pub(crate) fn bare(ack: &str) -> String {
    if !ack.contains(ANCHOR) {
        return String::new();
    }
    ack.replacen(
        ANCHOR,
        "WHERE i.node IS NULL AND i.id = ANY($1::bigint[])",
        1,
    )
}

/// Runs the deletes of `acks`: those claimed without a node by the bare ack, the others
/// and those it did not delete by the told ack. The accepted acks by id, and the error of
/// the statement that failed, if one did (its acks marked `resent` if it may have been
/// made; the acks of a statement not run are not accepted, to be tried again).
pub(crate) async fn run<T>(
    db: &Db<T>,
    client: &Client,
    acks: &mut [AckOp],
) -> (HashMap<i64, Acked>, Option<tokio_postgres::Error>) {
    let mut rows = HashMap::new();
    let bare = !db.sql.ack_plain.is_empty();
    let plain = |a: &AckOp| bare && a.plain;
    if acks.iter().any(plain) {
        let (ids, leases): (Vec<i64>, Vec<i64>) = acks
            .iter()
            .filter(|a| plain(a))
            .map(|a| (a.id, a.lease))
            .unzip();
        match ack_rows(pooled(client), &db.sql.ack_plain, &ids, &leases).await {
            Ok(r) => rows = r,
            Err(e) => {
                let sent = outcome::maybe_made(&e);
                for a in acks.iter_mut().filter(|a| plain(a)) {
                    a.resent |= sent;
                }
                return (rows, Some(e));
            }
        }
    }
    let (ids, leases): (Vec<i64>, Vec<i64>) = acks
        .iter()
        .filter(|a| !rows.contains_key(&a.id))
        .map(|a| (a.id, a.lease))
        .unzip();
    if ids.is_empty() {
        return (rows, None);
    }
    match ack_rows(pooled(client), &db.sql.ack, &ids, &leases).await {
        Ok(r) => rows.extend(r),
        Err(e) => {
            let sent = outcome::maybe_made(&e);
            for a in acks.iter_mut().filter(|a| !rows.contains_key(&a.id)) {
                a.resent |= sent;
            }
            return (rows, Some(e));
        }
    }
    (rows, None)
}

/// Runs a fenced delete (`sql`: the ack, told or bare); the accepted acks by id.
pub(crate) async fn ack_rows<C: GenericClient + Sync>(
    client: Conn<'_, C>,
    sql: &str,
    ids: &[i64],
    leases: &[i64],
) -> Result<HashMap<i64, Acked>, tokio_postgres::Error> {
    let rows = run_on(client, sql, &[&ids, &leases]).await?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bare_ack_deletes_only_rows_without_a_node() {
        let sql = crate::sql::Sql::new("x", 16, 1024);
        let b = bare(&sql.ack);
        assert!(
            b.contains("WHERE i.node IS NULL AND i.id = ANY($1::bigint[])"),
            "{b}"
        );
        // Still keeping windowed keys (`plain_sql.rs`), and nothing told.
        assert!(b.contains("keep_key("), "{b}");
        assert!(!b.contains("graph_told"), "{b}");
        assert_eq!(b.replacen("i.node IS NULL AND ", "", 1), sql.ack);
    }

    #[test]
    fn the_bare_ack_is_recorded_too() {
        let mut sql = crate::sql::Sql::new("x", 16, 1024);
        sql.record_history("x");
        let b = bare(&sql.ack);
        assert!(b.contains("i.node IS NULL AND"), "{b}");
        assert!(b.contains("INSERT INTO \"x\".history"), "{b}");
    }

    #[test]
    fn an_ack_not_naming_its_rows_has_no_bare_form() {
        assert_eq!(bare("DELETE FROM x.items WHERE id = $1"), "");
    }

    #[test]
    fn the_plain_claim_says_whether_a_row_has_a_node() {
        let sql = crate::sql::Sql::new("x", 16, 1024);
        assert!(
            sql.claim.trim_end().ends_with("progress, node IS NULL"),
            "{}",
            sql.claim
        );
    }
}
