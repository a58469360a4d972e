//! The claimer task. It takes the oldest receivers waiting on the claim board, as many as
//! one claim serves (`Options::max_claim` items), and runs one claim for them; up to
//! `Options::claims_in_flight` claims run at once, each on its own pooled connection, so
//! receivers do not wait in lockstep behind one round trip. Results fill their receivers in
//! the order they came; what a receiver that went away would have had goes to the next
//! one waiting, or back to the queue.
//!
//! When a claim comes back short the queue is drained for now: no new claim starts until
//! something may have changed (a push of this process, a `NOTIFY` from another, a new
//! receiver, items put back, a settle of a flowed queue), or the soonest delayed item is
//! due (after a claim that flow control held back: the flow claim's own look-again), or
//! the poll interval passed.

use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use leaseq_async::{Runtime, Taken};
use leaseq_core::Timestamp;

use crate::board::{Board, ClaimSlot};
use crate::claim;
use crate::counters::Counters;
use crate::db::Db;
use crate::error::DbError;
use crate::leases::Leases;
use crate::life::Life;
use crate::settles::Settles;
use crate::ticket::PgTicket;

/// What one claim got: its leases and, if it came back short, how long until the soonest
/// waiting item is visible.
type Got<T> = (Vec<Taken<T, PgTicket>>, Option<Duration>);

/// One claim: the receivers it serves and what came back.
struct Round<T> {
    slots: Vec<Arc<ClaimSlot<T>>>,
    /// The claimer's count of wake-ups when the claim started: a short claim with a
    /// wake-up since may have missed what that wake-up announced.
    woken: u64,
    result: Result<Got<T>, DbError>,
}

/// The claimer task and the parts it uses: it owns the claim board ([`Board`]) and its
/// wake-up, registers leases taken with a heartbeat ([`Leases`]) and queues what nobody
/// took for the settler ([`Settles`]).
pub(crate) struct Claimer<T: 'static> {
    pub(crate) db: Arc<Db<T>>,
    pub(crate) life: Arc<Life>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) board: Arc<Board<T>>,
    pub(crate) settles: Arc<Settles>,
    pub(crate) leases: Arc<Leases>,
}

impl<T: Send + 'static> Claimer<T> {
    /// Runs one claim for `slots`.
    async fn round(&self, slots: Vec<Arc<ClaimSlot<T>>>, woken: u64) -> Round<T> {
        let db = &*self.db;
        let asked: usize = slots.iter().map(|s| s.max).sum();
        let prefetch = db.options.prefetch;
        let ahead = if prefetch == 0 {
            0
        } else {
            prefetch.saturating_sub(self.board.slots.lock().prefetched.len())
        };
        // One claim takes at most `max_claim`: a claim of that many is full, not short.
        let wanted = (asked + ahead).min(db.options.max_claim);
        let result = async {
            let client = db.client().await?;
            let (got, hint) = claim::claim(db, &self.counters, &client, wanted).await?;
            let idle = if got.len() < wanted {
                let poll = db.options.poll_interval;
                Some(match hint {
                    // Held back by flow control: the flow claim's own look-again (a held
                    // slot's short poll, a group head's or a rate's due time, or ZERO: claim
                    // again at once). The soonest waiting item is not asked: the items
                    // visible now are the ones just held, and "now" would make the claimer
                    // claim again at once, over and over (`tests/flow_held_quiet.rs`).
                    Some(held) => held.min(poll),
                    None => {
                        let next = claim::next_visible(db, &client).await;
                        next.unwrap_or(poll).min(poll)
                    }
                })
            } else {
                None
            };
            Ok((got, idle))
        }
        .await;
        Round {
            slots,
            woken,
            result,
        }
    }

    /// The claimer task: runs until the store is gone or closed and its claims are done.
    ///
    /// Its one timer (the runtime's) ends a quiet spell (drained, or backing off after an
    /// error); it is moved only when the spell's end moves.
    pub(crate) async fn run(self) {
        let (db, board) = (&*self.db, &*self.board);
        let rt = &db.rt;
        let mut rounds = FuturesUnordered::new();
        // No new claim before this (drained, or backing off after an error).
        let mut quiet_until: Option<Timestamp> = None;
        let mut timer = rt.timer(Timestamp::MAX);
        let mut timer_at = Timestamp::MAX;
        let mut backoff = Duration::from_millis(10);
        // Wake-ups seen: a claim that comes back short goes quiet only if none came while
        // it was in flight (a push committed after the claim's snapshot rang one).
        let mut woken: u64 = 0;
        loop {
            let listener = board.wake.listen();
            let stopping = self.life.is_stopped() || self.life.is_closed();
            if stopping && rounds.is_empty() {
                return;
            }
            let quiet = quiet_until.is_some_and(|t| rt.now() < t);
            if !stopping && !quiet {
                while rounds.len() < db.options.claims_in_flight.max(1) {
                    let slots = board.slots.lock().take_slots(db.options.max_claim);
                    if slots.is_empty() {
                        break;
                    }
                    rounds.push(self.round(slots, woken));
                }
            }
            let wake_at = quiet_until.filter(|_| quiet).unwrap_or(Timestamp::MAX);
            if wake_at != timer_at {
                rt.reset_timer(&mut timer, wake_at);
                timer_at = wake_at;
            }
            tokio::select! {
                Some(done) = rounds.next(), if !rounds.is_empty() => {
                    let stale = done.woken != woken;
                    match self.finish(done) {
                        Ok(idle) => {
                            backoff = Duration::from_millis(10);
                            if let Some(idle) = idle.filter(|_| !stale) {
                                quiet_until = Some(rt.now().saturating_add(idle));
                            }
                        }
                        Err(()) => {
                            quiet_until = Some(rt.now().saturating_add(backoff));
                            backoff = (backoff * 2).min(Duration::from_secs(1));
                        }
                    }
                }
                // Something may have changed: look again at once (unless backing off).
                _ = listener => {
                    woken = woken.wrapping_add(1);
                    if backoff <= Duration::from_millis(10) {
                        quiet_until = None;
                    }
                }
                _ = &mut timer, if timer_at != Timestamp::MAX => {
                    quiet_until = None;
                }
            }
        }
    }

    /// Hands a finished claim's leases to its receivers; unfilled receivers wait again at
    /// the front of the board. `Ok(Some(idle))`: the claim came back short.
    fn finish(&self, done: Round<T>) -> Result<Option<Duration>, ()> {
        let (got, idle) = match done.result {
            Ok(r) => r,
            Err(e) => {
                self.db.failed("claim", e);
                self.requeue(done.slots);
                return Err(());
            }
        };
        let mut slots = done.slots;
        if !got.is_empty() {
            // Leases go to the oldest receivers waiting: one put back by another claim
            // that came back short while this one was in flight is served first.
            let newest = slots.iter().map(|s| s.seq).max().unwrap_or(0);
            let before = slots.len();
            self.board.slots.lock().take_older(newest, &mut slots);
            if slots.len() > before {
                slots.sort_by_key(|s| s.seq);
            }
        }
        let mut got = got.into_iter().peekable();
        let mut unfilled = Vec::new();
        for slot in slots {
            if got.peek().is_none() {
                unfilled.push(slot);
                continue;
            }
            self.fill(&slot, &mut got);
        }
        self.requeue(unfilled);
        // Meant for receivers that went away: the next ones waiting, or back to the queue.
        while got.peek().is_some() {
            let next = self.board.slots.lock().take_slots(1).pop();
            match next {
                Some(slot) => self.fill(&slot, &mut got),
                None => break,
            }
        }
        // Claimed ahead: kept for the next receives, up to `prefetch`.
        {
            let mut board = self.board.slots.lock();
            while board.prefetched.len() < self.db.options.prefetch {
                match got.next() {
                    Some(t) => board.prefetched.push_back(t),
                    None => break,
                }
            }
        }
        let leftover: Vec<(i64, i64)> = got.map(|t| (t.ticket.id, t.ticket.lease)).collect();
        self.settles.unclaim(leftover);
        Ok(idle)
    }

    /// Gives `slot` up to its `max` leases (none if it was abandoned) and wakes its
    /// receiver.
    fn fill(
        &self,
        slot: &ClaimSlot<T>,
        got: &mut std::iter::Peekable<std::vec::IntoIter<Taken<T, PgTicket>>>,
    ) {
        let mut st = slot.state.lock();
        if st.abandoned {
            return;
        }
        for mut taken in got.by_ref().take(slot.max) {
            if slot.heartbeat {
                self.leases.keep_alive(&mut taken);
            }
            st.got.push(taken);
        }
        if let Some(w) = st.waker.take() {
            w.wake();
        }
    }

    /// Puts receivers back in line, each at its place; once the queue is
    /// closed, wakes them instead (they were off the board when `close` woke the waiting
    /// ones, and see the queue closed). The flag is read under the board's lock, which
    /// `close` takes after setting it, so no receiver is left waiting.
    fn requeue(&self, slots: Vec<Arc<ClaimSlot<T>>>) {
        let mut board = self.board.slots.lock();
        if self.life.is_closed() {
            drop(board);
            for slot in slots {
                if let Some(w) = slot.state.lock().waker.take() {
                    w.wake();
                }
            }
            return;
        }
        board.put_back(slots);
    }
}
