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
//!
//! Once a concurrency limit held this store's claims back, no new claim starts while an
//! ack batch that claims runs (`handover.rs`): the ack frees slots and, in its
//! transaction, claims for the receivers waiting; a claim sent meanwhile would find the
//! slots still full. Each such batch rings the claimer when it ends.

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
use crate::handout::HandOut;
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
        let wanted = self.board.slots.lock().wanted(&slots, &db.options);
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
            if !stopping && !quiet && !crate::handover::holds_back(db, board) {
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

    /// Hands a finished claim's leases to its receivers (`handout.rs`); unfilled receivers
    /// wait again at the front of the board. `Ok(Some(idle))`: the claim came back short.
    fn finish(&self, done: Round<T>) -> Result<Option<Duration>, ()> {
        match done.result {
            Ok((got, idle)) => {
                self.hand_out().give(done.slots, got);
                Ok(idle)
            }
            Err(e) => {
                self.db.failed("claim", e);
                self.hand_out().requeue(done.slots);
                Err(())
            }
        }
    }

    /// The parts a hand-out touches.
    fn hand_out(&self) -> HandOut<'_, T> {
        HandOut {
            db: &self.db,
            life: &self.life,
            board: &self.board,
            settles: &self.settles,
            leases: &self.leases,
        }
    }
}
