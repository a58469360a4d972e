//! Claiming a queue with flow control: the flow claim (`flow_sql.rs`'s `flow_claim`, one
//! statement: the queue's advisory lock, the walk past held items, the leases; or, for a
//! queue limit alone, its slots without the lock, `flow_slots_sql.rs`; for ordered groups
//! without limits or rates, the groups' rows under the lock taken shared,
//! `flow_groups_sql.rs`), run by
//! `claim.rs` for a store whose queue has a row in `flow_queues` (`Db::flowed`), and what
//! its last row says: how soon to look again.

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio_postgres::Row;

use crate::db::Db;

/// How soon a claimer whose claim came back short because a concurrency limit or a
/// group's turn held items looks again: those wait for a settle, which another process
/// does not announce (this process's own settles wake the claimer at once).
pub(crate) const HELD_POLL: Duration = Duration::from_millis(20);

/// The first look again of a claimer whose claim a queue limit's full slots held back
/// (`flow_slots_sql.rs`): such a claim that finds no slot free writes nothing (no commit
/// to flush), so the claimer looks again soon, then twice as late each time in a row, up
/// to [`SLOT_POLL_BUSY`] for [`BUSY_LOOKS`] looks in a row, then up to [`HELD_POLL`]: a
/// slot another process's settle freed (this process's own settles ring the claimer,
/// `settle.rs`; another's are not announced) is taken within about the time it stayed
/// free, not a whole poll later.
const SLOT_POLL: Duration = Duration::from_millis(1);

/// The longest look again of a claimer held back by full slots while the queue is busy
/// (slots freed within the last [`BUSY_LOOKS`] looks): a held slot claim costs the server
/// some 0.2 ms and writes nothing, so a process waiting on slots that churn spends at most
/// about 5 % of a server core polling for them; without it a slot another process freed
/// stayed free up to [`HELD_POLL`] (BENCHMARKS.md, Round 10: the limit's slots were half
/// empty on average while both processes waited).
const SLOT_POLL_BUSY: Duration = Duration::from_millis(4);

/// Held slot claims in a row looked again at most [`SLOT_POLL_BUSY`] apart (about 0.1 s);
/// past them the queue is taken as held for long (slow jobs under their limit) and the
/// looks back off to [`HELD_POLL`].
const BUSY_LOOKS: u32 = 24;

/// The rows and groups one flow claim looks at, at most: `n` taken plus this many passed.
const WALK: usize = 1000;

/// Runs the flow claim of up to `n` items: the claimed rows (the plain claim's columns,
/// the fifth the order they were picked in, whether the row has no graph node at
/// [`PLAIN_AT`](crate::flow_plain_sql::PLAIN_AT)) and, if some were held back, how soon to look
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
    let mut binds = false;
    let got_any = rows.iter().any(|r| r.get::<_, Option<i64>>(0).is_some());
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
        binds = held & 1 != 0;
        let wake: Option<i64> = row.get(10);
        let mut look = wake.map(|us| Duration::from_micros(us.max(0) as u64));
        if held & (1 | 4) != 0 {
            let poll = if held & 8 != 0 && got_any {
                db.held_in_a_row.store(0, Ordering::Relaxed);
                SLOT_POLL
            } else if held & 8 != 0 {
                slot_poll(db.held_in_a_row.fetch_add(1, Ordering::Relaxed))
            } else {
                HELD_POLL
            };
            look = Some(look.map_or(poll, |w| w.min(poll)));
        }
        if held & 8 == 0 {
            db.held_in_a_row.store(0, Ordering::Relaxed);
        }
        hint = look;
        false
    });
    db.limit_binds.store(binds, Ordering::Relaxed);
    rows.sort_by_key(|r| r.get::<_, i64>(4));
    Ok((rows, hint))
}

/// The look again after `in_a_row` claims before held back by full slots: [`SLOT_POLL`]
/// doubled each time, at most [`SLOT_POLL_BUSY`] for [`BUSY_LOOKS`] looks, then at most
/// [`HELD_POLL`].
fn slot_poll(in_a_row: u32) -> Duration {
    let cap = if in_a_row < BUSY_LOOKS {
        SLOT_POLL_BUSY
    } else {
        HELD_POLL
    };
    SLOT_POLL.saturating_mul(1u32 << in_a_row.min(16)).min(cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_slot_claim_looks_again_sooner_than_a_poll_then_backs_off() {
        assert_eq!(slot_poll(0), SLOT_POLL);
        assert_eq!(slot_poll(1), SLOT_POLL * 2);
        assert_eq!(slot_poll(2), SLOT_POLL_BUSY);
        assert_eq!(slot_poll(BUSY_LOOKS - 1), SLOT_POLL_BUSY);
        assert_eq!(slot_poll(BUSY_LOOKS), HELD_POLL);
        assert_eq!(slot_poll(u32::MAX), HELD_POLL);
        assert!(SLOT_POLL_BUSY < HELD_POLL);
    }
}
