//! The claimer task. It takes the oldest receivers waiting on the claim board, as many as
//! one claim serves (`Options::max_claim` items), and runs one claim for them; up to
//! `Options::claims_in_flight` claims run at once, each on its own pooled connection, so
//! receivers do not wait in lockstep behind one round trip. Results fill their receivers in
//! the order they came; what a receiver that went away would have had goes to the next
//! one waiting, or back to the queue.
//!
//! When a claim comes back short the queue is drained for now: no new claim starts until
//! something may have changed (a push of this process, a `NOTIFY` from another, a new
//! receiver, items put back), or the soonest delayed item is due, or the poll interval
//! passed.

use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use leaseq_async::Taken;
use tokio::time::Instant;

use crate::claim::{self, ClaimSlot};
use crate::error::DbError;
use crate::store::{PgTicket, Shared};

/// What one claim got: its leases and, if it came back short, how long until the soonest
/// waiting item is visible.
type Got<T> = (Vec<Taken<T, PgTicket>>, Option<Duration>);

/// One claim: the receivers it serves and what came back.
struct Round<T> {
    slots: Vec<Arc<ClaimSlot<T>>>,
    result: Result<Got<T>, DbError>,
}

/// Runs one claim for `slots`.
async fn round<T: Send + 'static>(
    shared: Arc<Shared<T>>,
    slots: Vec<Arc<ClaimSlot<T>>>,
) -> Round<T> {
    let asked: usize = slots.iter().map(|s| s.max).sum();
    let prefetch = shared.options.prefetch;
    let ahead = if prefetch == 0 {
        0
    } else {
        prefetch.saturating_sub(shared.board.lock().prefetched.len())
    };
    // One claim takes at most `max_claim`: a claim of that many is full, not short.
    let wanted = (asked + ahead).min(shared.options.max_claim);
    let result = async {
        let client = shared.client().await?;
        let got = claim::claim(&shared, &client, wanted).await?;
        let idle = if got.len() < wanted {
            let next = claim::next_visible(&shared, &client).await;
            let poll = shared.options.poll_interval;
            Some(next.unwrap_or(poll).min(poll))
        } else {
            None
        };
        Ok((got, idle))
    }
    .await;
    Round { slots, result }
}

/// The claimer task: runs until the store is gone or closed and its claims are done.
pub(crate) async fn run<T: Send + 'static>(shared: Arc<Shared<T>>) {
    let mut rounds = FuturesUnordered::new();
    // No new claim before this (drained, or backing off after an error).
    let mut quiet_until: Option<Instant> = None;
    let mut backoff = Duration::from_millis(10);
    loop {
        let listener = shared.claim_wake.listen();
        let stopping = shared.is_stopped() || shared.is_closed();
        if stopping && rounds.is_empty() {
            return;
        }
        let quiet = quiet_until.is_some_and(|t| Instant::now() < t);
        if !stopping && !quiet {
            while rounds.len() < shared.options.claims_in_flight.max(1) {
                let slots = shared.board.lock().take_slots(shared.options.max_claim);
                if slots.is_empty() {
                    break;
                }
                rounds.push(round(shared.clone(), slots));
            }
        }
        let wake_at = quiet_until.filter(|_| quiet);
        tokio::select! {
            Some(done) = rounds.next(), if !rounds.is_empty() => {
                match finish(&shared, done) {
                    Ok(idle) => {
                        backoff = Duration::from_millis(10);
                        if let Some(idle) = idle {
                            quiet_until = Some(Instant::now() + idle);
                        }
                    }
                    Err(()) => {
                        quiet_until = Some(Instant::now() + backoff);
                        backoff = (backoff * 2).min(Duration::from_secs(1));
                    }
                }
            }
            // Something may have changed: look again at once (unless backing off).
            _ = listener => {
                if backoff <= Duration::from_millis(10) {
                    quiet_until = None;
                }
            }
            _ = tokio::time::sleep_until(wake_at.unwrap_or_else(Instant::now)), if wake_at.is_some() => {
                quiet_until = None;
            }
        }
    }
}

/// Hands a finished claim's leases to its receivers; unfilled receivers wait again at the
/// front of the board. `Ok(Some(idle))`: the claim came back short.
fn finish<T>(shared: &Shared<T>, done: Round<T>) -> Result<Option<Duration>, ()> {
    let (got, idle) = match done.result {
        Ok(r) => r,
        Err(e) => {
            shared.failed("claim", e);
            requeue(shared, done.slots);
            return Err(());
        }
    };
    let mut got = got.into_iter().peekable();
    let mut unfilled = Vec::new();
    for slot in done.slots {
        if got.peek().is_none() {
            unfilled.push(slot);
            continue;
        }
        fill(shared, &slot, &mut got);
    }
    requeue(shared, unfilled);
    // Meant for receivers that went away: the next ones waiting, or back to the queue.
    while got.peek().is_some() {
        let next = shared.board.lock().take_slots(1).pop();
        match next {
            Some(slot) => fill(shared, &slot, &mut got),
            None => break,
        }
    }
    // Claimed ahead: kept for the next receives, up to `prefetch`.
    {
        let mut board = shared.board.lock();
        while board.prefetched.len() < shared.options.prefetch {
            match got.next() {
                Some(t) => board.prefetched.push_back(t),
                None => break,
            }
        }
    }
    let leftover: Vec<(i64, i64)> = got.map(|t| (t.ticket.id, t.ticket.lease)).collect();
    if !leftover.is_empty() {
        shared.settles.lock().unclaims.extend(leftover);
        shared.settle_queued.notify(1);
    }
    Ok(idle)
}

/// Gives `slot` up to its `max` leases (none if it was abandoned) and wakes its receiver.
fn fill<T>(
    shared: &Shared<T>,
    slot: &ClaimSlot<T>,
    got: &mut std::iter::Peekable<std::vec::IntoIter<Taken<T, PgTicket>>>,
) {
    let mut st = slot.state.lock();
    if st.abandoned {
        return;
    }
    for mut taken in got.by_ref().take(slot.max) {
        if slot.heartbeat {
            claim::keep_alive(shared, &mut taken);
        }
        st.got.push(taken);
    }
    if let Some(w) = st.waker.take() {
        w.wake();
    }
}

/// Puts receivers back at the front of the board, in their order; once the queue is
/// closed, wakes them instead (they were off the board when `close` woke the waiting ones,
/// and see the queue closed). The flag is read under the board's lock, which `close` takes
/// after setting it, so no receiver is left waiting.
fn requeue<T>(shared: &Shared<T>, slots: Vec<Arc<ClaimSlot<T>>>) {
    let mut board = shared.board.lock();
    if shared.is_closed() {
        drop(board);
        for slot in slots {
            if let Some(w) = slot.state.lock().waker.take() {
                w.wake();
            }
        }
        return;
    }
    for slot in slots.into_iter().rev() {
        board.waiting.push_front(slot);
    }
}
