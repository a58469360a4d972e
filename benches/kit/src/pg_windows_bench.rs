//! What the keys' windows cost on Postgres those who do not use them (`pg_bench
//! --windows`): rounds of a `PgPool` of 4 workers (no-op handler, as `run_pool`) on one
//! queue of plain items, with the two row triggers of schema step 12 (`items_key_gone`,
//! `items_key_dead`, whose `WHEN` every plain row fails) in place and dropped, in an order
//! that alternates from round to round, after a discarded warm-up of each, in one schema.
//! The triggers are the only step-12 change on the plain paths (snoozes and windows add
//! nullable columns that plain rows leave NULL), so "dropped" is the store before the
//! step. Issue 32's goal: with >= 0.95 x without, in the same run.

use crate::pg_store_bench::{run_pool_with, BenchError};
use leaseq_postgres::Options;

/// One round: items/s without the triggers, then with them.
pub type WindowsRound = [f64; 2];

/// The goal: the pool with the triggers at least this fraction of its rate without.
pub const GOAL: f64 = 0.95;

/// Drops (`on` false) or makes again (`on` true) the triggers in `schema`, as step 12 makes
/// them.
async fn triggers(url: &str, schema: &str, on: bool) -> Result<(), BenchError> {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(conn);
    let s = format!("\"{schema}\"");
    let mut sql = format!(
        "DROP TRIGGER IF EXISTS items_key_gone ON {s}.items;
         DROP TRIGGER IF EXISTS items_key_dead ON {s}.items;"
    );
    if on {
        sql.push_str(&format!(
            "CREATE TRIGGER items_key_gone AFTER DELETE ON {s}.items FOR EACH ROW
                 WHEN (OLD.key_hold >= 2 AND OLD.key IS NOT NULL AND OLD.state IN (0, 1))
                 EXECUTE FUNCTION {s}.keep_key_window();
             CREATE TRIGGER items_key_dead AFTER UPDATE OF state ON {s}.items FOR EACH ROW
                 WHEN (OLD.key_hold >= 2 AND OLD.key IS NOT NULL AND OLD.state IN (0, 1) AND NEW.state = 2)
                 EXECUTE FUNCTION {s}.keep_key_window();"
        ));
    }
    client.batch_execute(&sql).await?;
    Ok(())
}

/// Runs `rounds` rounds of `items` through a pool of 4 workers, without and with the
/// triggers, in `schema` (left with them).
pub async fn run_windows_rounds(
    url: &str,
    schema: &str,
    rounds: usize,
    items: u64,
) -> Result<Vec<WindowsRound>, BenchError> {
    let run = |i: usize, n: u64| async move {
        triggers(url, schema, i == 1).await?;
        Ok::<f64, BenchError>(
            run_pool_with(url, schema, "bench-windows", n, 4, Options::new(), None)
                .await?
                .items_per_sec,
        )
    };
    // The first open migrates the schema (and makes the triggers): a warm-up of each.
    run_pool_with(
        url,
        schema,
        "bench-windows",
        items / 10,
        4,
        Options::new(),
        None,
    )
    .await?;
    run(0, items / 10).await?;
    let out = crate::pg_history_bench::alternating(rounds, |i| run(i, items)).await?;
    triggers(url, schema, true).await?;
    Ok(out)
}
