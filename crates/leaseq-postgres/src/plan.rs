//! The claim's plan as the store's own sessions get it ([`PgStore::explain_claim`]): for an
//! operator, or a test, checking that a claim reads the claim index in its order and takes
//! the rows it returns, never sorting the backlog, whatever the table's statistics say.

use crate::error::DbError;
use crate::store::PgStore;

/// The name the statement is prepared under while it is explained.
const NAME: &str = "leaseq_explain_claim";

impl<T: 'static> PgStore<T> {
    /// `EXPLAIN (ANALYZE, BUFFERS)` of this queue's claim statement for a claim of `n`
    /// items (at most [`Options::max_claim`](crate::Options::max_claim)), run on one of the
    /// store's pooled connections, so with their session settings, inside a transaction
    /// that is rolled back: nothing changes, but the rows it takes are locked (other claims
    /// skip them) for the moment it runs. `generic`: the plan the plan cache keeps for the
    /// prepared statement (as the store's claims use once a connection ran five of them);
    /// otherwise one planned for these values. The plan's lines, joined by newlines.
    pub async fn explain_claim(&self, n: usize, generic: bool) -> Result<String, DbError> {
        let db = &*self.db;
        let client = db.client().await?;
        let mode = if generic {
            "force_generic_plan"
        } else {
            "force_custom_plan"
        };
        let queue = db.queue.replace('\'', "''");
        let n = n.clamp(1, db.options.max_claim.max(1));
        let visibility = db.visibility_us();
        let run = async {
            client
                .batch_execute(&format!(
                    "BEGIN; SET LOCAL plan_cache_mode = {mode}; PREPARE {NAME} AS {}",
                    db.sql.claim
                ))
                .await?;
            let rows = client
                .simple_query(&format!(
                    "EXPLAIN (ANALYZE, BUFFERS) EXECUTE {NAME}('{queue}', {n}, {visibility})"
                ))
                .await?;
            Ok::<_, tokio_postgres::Error>(
                rows.iter()
                    .filter_map(|m| match m {
                        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        };
        let plan = run.await;
        // Prepared statements outlive transactions: both undone whatever happened.
        let undo = client
            .batch_execute(&format!("ROLLBACK; DEALLOCATE {NAME}"))
            .await;
        if undo.is_err() {
            // The connection may keep the statement or the transaction: not put back in
            // the pool.
            drop(deadpool_postgres::Object::take(client));
        }
        Ok(plan?)
    }
}
