//! Claiming's statements: the claim (`FOR UPDATE SKIP LOCKED`, decoding, undecodable rows
//! dead-lettered), putting back what nobody took, and the soonest delayed item. The task
//! that runs claims for the receivers waiting on the board (`board.rs`) is in `claimer.rs`.

use std::time::Duration;

use leaseq_async::Taken;
use leaseq_core::{MessageId, Reason};
use tokio_postgres::Row;

use crate::board::Board;
use crate::counters::Counters;
use crate::db::Db;
use crate::ticket::PgTicket;

/// Where the plain claim's row says it has no graph node (`node IS NULL`).
const PLAIN_AT: usize = 10;

/// A claimed row, decoded or not.
pub(crate) struct Claimed<T> {
    pub(crate) taken: Result<Taken<T, PgTicket>, (i64, i64, String)>,
    priority: i16,
    visible_us: i64,
}

/// Turns a row of a claim statement into a lease (or the decode error); `plain_at`: the
/// column that says whether the row has no node (10 in the plain claim's rows, the flow
/// claims' [`PLAIN_AT`](crate::flow_plain_sql::PLAIN_AT)).
pub(crate) fn lease_of<T>(db: &Db<T>, row: &Row, plain_at: usize) -> Claimed<T> {
    let id: i64 = row.get(0);
    let lease: i64 = row.get(1);
    let attempts: i32 = row.get(2);
    let priority: i16 = row.get(3);
    let visible_us: i64 = row.get(4);
    let deadline_in: i64 = row.get(5);
    let expires_in: Option<i64> = row.get(6);
    let taken = match decode_sized(db, row, 7) {
        Ok(item) => {
            let attempt = u32::try_from(attempts).unwrap_or(0);
            let expires_at = expires_in.map(|us| db.local_in(us));
            Ok(Taken {
                item,
                id: MessageId::new(id as u64),
                attempt,
                deadline: db.local_in(deadline_in),
                expires_at,
                ticket: PgTicket {
                    id,
                    lease,
                    attempts: attempt,
                    expires_at,
                    beat: None,
                    progress: row
                        .get::<_, Option<&[u8]>>(9)
                        .map(leaseq_async::Progress::from_stored),
                    plain: row.try_get::<_, bool>(plain_at).unwrap_or(false),
                },
            })
        }
        Err(e) => Err((id, lease, e.to_string())),
    };
    Claimed {
        taken,
        priority,
        visible_us,
    }
}

/// The item of a row read back with `sized_payload!` (payload at `at`, size after it):
/// decoded, or why not: a payload over [`Options::max_item_size`](crate::Options) was not
/// even loaded.
pub(crate) fn decode_sized<T>(
    db: &Db<T>,
    row: &Row,
    at: usize,
) -> Result<T, leaseq_async::CodecError> {
    match row.get::<_, Option<&[u8]>>(at) {
        Some(payload) => db.codec.decode(payload),
        None => Err(leaseq_async::CodecError(format!(
            "the item is {} bytes, over this queue's max_item_size of {}",
            row.get::<_, Option<i64>>(at + 1).unwrap_or(-1),
            db.options.max_item_size
        ))),
    }
}

/// Claims up to `n` items with `client`: the leases in claim order, undecodable or
/// oversized rows dead-lettered (reason `Undecodable`, the decode error or the sizes kept);
/// and, from a queue with flow control (`flow_claim.rs`) that held items back, how soon to
/// look again.
pub(crate) async fn claim<T>(
    db: &Db<T>,
    counters: &Counters,
    client: &deadpool_postgres::Client,
    n: usize,
) -> Result<(Vec<Taken<T, PgTicket>>, Option<Duration>), tokio_postgres::Error> {
    let flowed = db.is_flowed();
    let (rows, hint) = if flowed {
        crate::flow_claim::run(db, client, n).await?
    } else {
        let stmt = client.prepare_cached(&db.sql.claim).await?;
        let rows = client
            .query(&stmt, &[&db.queue, &(n as i64), &db.visibility_us()])
            .await?;
        (rows, None)
    };
    let plain_at = if flowed {
        crate::flow_plain_sql::PLAIN_AT
    } else {
        PLAIN_AT
    };
    let mut claimed: Vec<Claimed<T>> = rows.iter().map(|r| lease_of(db, r, plain_at)).collect();
    // The flow claim's rows come in the order it picked them.
    if !flowed {
        claimed.sort_by_key(|c| (std::cmp::Reverse(c.priority), c.visible_us, id_of(c)));
    }
    let mut out = Vec::with_capacity(claimed.len());
    for c in claimed {
        match c.taken {
            Ok(t) => out.push(t),
            Err((id, lease, error)) => {
                let bury = client.prepare_cached(&db.sql.terminate).await?;
                let code = i16::from(Reason::Undecodable.code());
                client
                    .execute(&bury, &[&id, &lease, &code, &Some(error)])
                    .await?;
                Counters::add(&counters.dead_lettered, 1);
            }
        }
    }
    let redelivered = out.iter().filter(|t| t.attempt > 1).count() as u64;
    Counters::add(&counters.delivered, out.len() as u64);
    Counters::add(&counters.redelivered, redelivered);
    Ok((out, hint))
}

fn id_of<T>(c: &Claimed<T>) -> i64 {
    match &c.taken {
        Ok(t) => t.ticket.id,
        Err((id, _, _)) => *id,
    }
}

/// Puts back leases, their attempt not counted, in one statement: `unclaims`, claimed for
/// receivers that went away (never delivered: taken off `delivered`), and `put_backs`,
/// delivered and given back unstarted (`Store::put_back`: counted in `put_back` if the
/// lease was still theirs).
pub(crate) async fn unclaim<T>(
    db: &Db<T>,
    counters: &Counters,
    board: &Board<T>,
    client: &deadpool_postgres::Client,
    unclaims: &[(i64, i64)],
    put_backs: &[(i64, i64)],
) {
    let all = || unclaims.iter().chain(put_backs);
    let ids: Vec<i64> = all().map(|l| l.0).collect();
    let tokens: Vec<i64> = all().map(|l| l.1).collect();
    let r = async {
        let stmt = client.prepare_cached(&db.sql.unclaim).await?;
        client.query(&stmt, &[&ids, &tokens]).await
    }
    .await;
    match r {
        Ok(rows) => {
            let n = unclaims.len() as u64;
            counters
                .delivered
                .fetch_sub(n, std::sync::atomic::Ordering::Relaxed);
            let back: std::collections::HashSet<i64> = rows.iter().map(|r| r.get(0)).collect();
            let put_back = put_backs.iter().filter(|l| back.contains(&l.0)).count();
            Counters::add(&counters.put_back, put_back as u64);
            board.wake.notify(usize::MAX);
        }
        // They come back when their lease runs out, the attempt counted.
        Err(e) => db.failed("unclaim", e),
    }
}

/// How long until the soonest waiting item becomes visible, if any is waiting. A queue
/// found with flow control while this store claimed it plainly switches the store to the
/// flow claim: `Some(ZERO)`, claim again at once.
pub(crate) async fn next_visible<T>(
    db: &Db<T>,
    client: &deadpool_postgres::Client,
) -> Option<Duration> {
    let stmt = client.prepare_cached(&db.sql.next_visible).await.ok()?;
    let row = client.query_one(&stmt, &[&db.queue]).await.ok()?;
    let us: Option<i64> = row.get(0);
    if row.get::<_, bool>(1) && !db.is_flowed() {
        db.set_flowed(true);
        return Some(Duration::ZERO);
    }
    us.map(|us| Duration::from_micros(us.max(0) as u64))
}
