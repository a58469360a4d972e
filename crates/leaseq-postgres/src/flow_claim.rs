//! Claiming a queue with flow control: the flow claim (`flow_sql.rs`'s `flow_claim`, one
//! statement: the queue's advisory lock, the walk past held items, the leases), run by
//! `claim.rs` for a store whose queue has a row in `flow_queues` (`Db::flowed`), and what
//! its last row says: how soon to look again.

use std::time::Duration;

use tokio_postgres::Row;

use crate::db::Db;

/// How soon a claimer whose claim came back short because a concurrency limit or a
/// group's turn held items looks again: those wait for a settle, which another process
/// does not announce (this process's own settles wake the claimer at once).
pub(crate) const HELD_POLL: Duration = Duration::from_millis(20);

/// The rows and groups one flow claim looks at, at most: `n` taken plus this many passed.
const WALK: usize = 1000;

/// Runs the flow claim of up to `n` items: the claimed rows (the plain claim's columns,
/// the fifth the order they were picked in) and, if some were held back, how soon to look
/// again (a rate's next eligible instant, a group head's due time, or [`HELD_POLL`]); a
/// queue found without flow control switches the store back to the plain claim
/// (`Some(ZERO)`: claim again at once).
pub(crate) async fn run<T>(
    db: &Db<T>,
    client: &deadpool_postgres::Client,
    n: usize,
) -> Result<(Vec<Row>, Option<Duration>), tokio_postgres::Error> {
    let stmt = client.prepare_cached(&db.sql.flow_claim).await?;
    let budget = (n + WALK) as i32;
    let block_dead = db.config.group_dead_letter_choice() == leaseq_core::GroupDeadLetter::Block;
    let note_start = db.options.retention.is_some();
    let mut rows = client
        .query(
            &stmt,
            &[
                &db.queue,
                &(n as i32),
                &db.visibility_us(),
                &block_dead,
                &(db.options.max_item_size as i64),
                &note_start,
                &budget,
            ],
        )
        .await?;
    let mut hint = None;
    rows.retain(|row| {
        if row.get::<_, Option<i64>>(0).is_some() {
            return true;
        }
        let held: i32 = row.get(11);
        if held < 0 {
            db.set_flowed(false);
            hint = Some(Duration::ZERO);
            return false;
        }
        let wake: Option<i64> = row.get(10);
        let mut look = wake.map(|us| Duration::from_micros(us.max(0) as u64));
        if held & (1 | 4) != 0 {
            look = Some(look.map_or(HELD_POLL, |w| w.min(HELD_POLL)));
        }
        hint = look;
        false
    });
    rows.sort_by_key(|r| r.get::<_, i64>(4));
    Ok((rows, hint))
}
