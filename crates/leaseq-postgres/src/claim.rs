//! Claiming: the claim board (receivers of this process post what they want), the claim
//! statement (`FOR UPDATE SKIP LOCKED`, decoding, undecodable rows dead-lettered), the
//! heartbeat registration of a new lease, and putting back what nobody took. The task that
//! runs claims is in `claimer.rs`.

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

use leaseq_async::{LeaseSignal, Taken};
use leaseq_core::{MessageId, Reason};
use parking_lot::Mutex;
use tokio_postgres::Row;

use crate::counters::Counters;
use crate::store::{Held, PgTicket, Shared};

/// One waiting receive: how many it takes, whether with a heartbeat, and what it got.
pub(crate) struct ClaimSlot<T> {
    pub(crate) max: usize,
    pub(crate) heartbeat: bool,
    pub(crate) state: Mutex<SlotState<T>>,
}

pub(crate) struct SlotState<T> {
    pub(crate) got: Vec<Taken<T, PgTicket>>,
    pub(crate) waker: Option<Waker>,
    /// The receive went away: whatever comes is handed back.
    pub(crate) abandoned: bool,
}

/// The receivers waiting, oldest first.
pub(crate) struct ClaimBoard<T> {
    pub(crate) waiting: VecDeque<Arc<ClaimSlot<T>>>,
    /// Leases claimed ahead (`Options::prefetch`), oldest first, for the next receives.
    pub(crate) prefetched: VecDeque<Taken<T, PgTicket>>,
}

impl<T> Default for ClaimBoard<T> {
    fn default() -> Self {
        ClaimBoard {
            waiting: VecDeque::new(),
            prefetched: VecDeque::new(),
        }
    }
}

impl<T> ClaimBoard<T> {
    /// Takes up to `max` prefetched leases with at least half their visibility left
    /// (`fresh_until`: the local time before which a lease's deadline is too near); the
    /// stale ones are returned in `stale` to be put back.
    pub(crate) fn take_prefetched(
        &mut self,
        max: usize,
        fresh_until: leaseq_core::Timestamp,
        stale: &mut Vec<(i64, i64)>,
    ) -> Vec<Taken<T, PgTicket>> {
        let mut out = Vec::new();
        while out.len() < max {
            let Some(t) = self.prefetched.pop_front() else {
                break;
            };
            if t.deadline < fresh_until {
                stale.push((t.ticket.id, t.ticket.lease));
            } else {
                out.push(t);
            }
        }
        out
    }

    /// Takes the oldest waiting slots for one claim: as many as fit in `max_claim` items
    /// (at least one slot). Abandoned slots are dropped on the way.
    pub(crate) fn take_slots(&mut self, max_claim: usize) -> Vec<Arc<ClaimSlot<T>>> {
        let mut taken = Vec::new();
        let mut wanted = 0;
        while let Some(slot) = self.waiting.front() {
            if slot.state.lock().abandoned {
                self.waiting.pop_front();
                continue;
            }
            if !taken.is_empty() && wanted + slot.max > max_claim {
                break;
            }
            wanted += slot.max;
            taken.extend(self.waiting.pop_front());
        }
        taken
    }
}

/// A claimed row, decoded or not.
pub(crate) struct Claimed<T> {
    pub(crate) taken: Result<Taken<T, PgTicket>, (i64, i64, String)>,
    priority: i16,
    visible_us: i64,
}

/// Turns a row of the claim statement into a lease (or the decode error).
pub(crate) fn lease_of<T>(shared: &Shared<T>, row: &Row) -> Claimed<T> {
    let id: i64 = row.get(0);
    let lease: i64 = row.get(1);
    let attempts: i32 = row.get(2);
    let priority: i16 = row.get(3);
    let visible_us: i64 = row.get(4);
    let deadline_in: i64 = row.get(5);
    let expires_in: Option<i64> = row.get(6);
    let taken = match decode_sized(shared, row, 7) {
        Ok(item) => {
            let attempt = u32::try_from(attempts).unwrap_or(0);
            let expires_at = expires_in.map(|us| shared.local_in(us));
            Ok(Taken {
                item,
                id: MessageId::new(id as u64),
                attempt,
                deadline: shared.local_in(deadline_in),
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
    shared: &Shared<T>,
    row: &Row,
    at: usize,
) -> Result<T, leaseq_async::CodecError> {
    match row.get::<_, Option<&[u8]>>(at) {
        Some(payload) => shared.codec.decode(payload),
        None => Err(leaseq_async::CodecError(format!(
            "the item is {} bytes, over this queue's max_item_size of {}",
            row.get::<_, Option<i64>>(at + 1).unwrap_or(-1),
            shared.options.max_item_size
        ))),
    }
}

/// Claims up to `n` items with `client`: the leases in claim order, undecodable or
/// oversized rows dead-lettered (reason `Undecodable`, the decode error or the sizes kept).
pub(crate) async fn claim<T>(
    shared: &Shared<T>,
    client: &deadpool_postgres::Client,
    n: usize,
) -> Result<Vec<Taken<T, PgTicket>>, tokio_postgres::Error> {
    let stmt = client.prepare_cached(&shared.sql.claim).await?;
    let rows = client
        .query(
            &stmt,
            &[&shared.queue, &(n as i64), &shared.visibility_us()],
        )
        .await?;
    let mut claimed: Vec<Claimed<T>> = rows.iter().map(|r| lease_of(shared, r)).collect();
    claimed.sort_by_key(|c| (std::cmp::Reverse(c.priority), c.visible_us, id_of(c)));
    let mut out = Vec::with_capacity(claimed.len());
    for c in claimed {
        match c.taken {
            Ok(t) => out.push(t),
            Err((id, lease, error)) => {
                let bury = client.prepare_cached(&shared.sql.terminate).await?;
                let code = i16::from(Reason::Undecodable.code());
                client
                    .execute(&bury, &[&id, &lease, &code, &Some(error)])
                    .await?;
                Counters::add(&shared.counters.dead_lettered, 1);
            }
        }
    }
    let redelivered = out.iter().filter(|t| t.attempt > 1).count() as u64;
    Counters::add(&shared.counters.delivered, out.len() as u64);
    Counters::add(&shared.counters.redelivered, redelivered);
    Ok(out)
}

fn id_of<T>(c: &Claimed<T>) -> i64 {
    match &c.taken {
        Ok(t) => t.ticket.id,
        Err((id, _, _)) => *id,
    }
}

/// Registers a lease with the heartbeat.
pub(crate) fn keep_alive<T>(shared: &Shared<T>, taken: &mut Taken<T, PgTicket>) {
    let signal = Arc::new(LeaseSignal::default());
    shared.held.lock().insert(
        taken.ticket.id,
        Held {
            lease: taken.ticket.lease,
            signal: signal.clone(),
        },
    );
    taken.ticket.beat = Some(signal);
}

/// Puts back leases, their attempt not counted, in one statement: `unclaims`, claimed for
/// receivers that went away (never delivered: taken off `delivered`), and `put_backs`,
/// delivered and given back unstarted (`Store::put_back`: counted in `put_back` if the
/// lease was still theirs).
pub(crate) async fn unclaim<T>(
    shared: &Shared<T>,
    client: &deadpool_postgres::Client,
    unclaims: &[(i64, i64)],
    put_backs: &[(i64, i64)],
) {
    let all = || unclaims.iter().chain(put_backs);
    let ids: Vec<i64> = all().map(|l| l.0).collect();
    let tokens: Vec<i64> = all().map(|l| l.1).collect();
    let r = async {
        let stmt = client.prepare_cached(&shared.sql.unclaim).await?;
        client.query(&stmt, &[&ids, &tokens]).await
    }
    .await;
    match r {
        Ok(rows) => {
            let n = unclaims.len() as u64;
            shared
                .counters
                .delivered
                .fetch_sub(n, std::sync::atomic::Ordering::Relaxed);
            let back: std::collections::HashSet<i64> = rows.iter().map(|r| r.get(0)).collect();
            let put_back = put_backs.iter().filter(|l| back.contains(&l.0)).count();
            Counters::add(&shared.counters.put_back, put_back as u64);
            shared.claim_wake.notify(usize::MAX);
        }
        // They come back when their lease runs out, the attempt counted.
        Err(e) => shared.failed("unclaim", e),
    }
}

/// How long until the soonest waiting item becomes visible, if any is waiting.
pub(crate) async fn next_visible<T>(
    shared: &Shared<T>,
    client: &deadpool_postgres::Client,
) -> Option<Duration> {
    let stmt = client.prepare_cached(&shared.sql.next_visible).await.ok()?;
    let row = client.query_one(&stmt, &[&shared.queue]).await.ok()?;
    let us: Option<i64> = row.get(0);
    us.map(|us| Duration::from_micros(us.max(0) as u64))
}
