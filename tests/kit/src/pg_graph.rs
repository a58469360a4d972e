//! A batch's fan-out on Postgres as the graph tests drive it by hand: the store's session
//! settings, a batch pushed and its nodes read back, `graph_told` called in the caller's
//! transaction.

use leaseq_async::dependencies::{BatchOn, DependencyStore};
use leaseq_postgres::PgQueue;
use tokio_postgres::Client;

use crate::pg::SCHEMA;

/// The store's own session settings (`open.rs` of leaseq-postgres): the plans its graph
/// statements run with there.
pub const STORE_SESSION: &str = "SET jit = off; SET enable_bitmapscan = off; SET enable_sort = off;
     SET enable_seqscan = off; SET plan_cache_mode = force_generic_plan;";

/// A batch of `n` children and one callback (`on`) pushed to `q`: the children's nodes in
/// order, and the callback's node.
pub async fn fan_out(q: &PgQueue<Vec<u8>>, db: &Client, n: u32, on: BatchOn) -> (Vec<i64>, i64) {
    let kids: Vec<Vec<u8>> = (0..n).map(|i| i.to_le_bytes().to_vec()).collect();
    let batch = q
        .store()
        .push_batch(kids, b"callback".to_vec(), on)
        .await
        .unwrap();
    let s = SCHEMA.name();
    let id = i64::try_from(batch.get()).unwrap();
    let cb: i64 = db
        .query_one(
            &format!("SELECT callback FROM \"{s}\".graph_batches WHERE batch = $1"),
            &[&id],
        )
        .await
        .unwrap()
        .get(0);
    let kids: Vec<i64> = db
        .query(
            &format!(
                "SELECT node FROM \"{s}\".graph_nodes WHERE batch = $1 AND node <> $2 ORDER BY node"
            ),
            &[&id, &cb],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(kids.len(), n as usize, "every child has its node");
    (kids, cb)
}

/// `graph_told` of `nodes` moved to `state` (1 live again, 2 acked, 3 dead letter), in the
/// caller's transaction: how many nodes moved.
pub async fn told(db: &Client, nodes: &[i64], state: i16) -> i32 {
    let s = SCHEMA.name();
    let states = vec![state; nodes.len()];
    let payloads: Vec<Option<Vec<u8>>> = vec![None; nodes.len()];
    db.query_one(
        &format!("SELECT \"{s}\".graph_told($1, $2, $3)"),
        &[&nodes, &states, &payloads],
    )
    .await
    .unwrap()
    .get(0)
}

/// How many rows of `items` node `node` has (a callback released once has one).
pub async fn released_rows(db: &Client, node: i64) -> i64 {
    let s = SCHEMA.name();
    db.query_one(
        &format!("SELECT count(*) FROM \"{s}\".items WHERE node = $1"),
        &[&node],
    )
    .await
    .unwrap()
    .get(0)
}
