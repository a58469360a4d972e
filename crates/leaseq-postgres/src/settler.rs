//! Settling batches: everything queued (acks of all workers, hand-backs of dropped
//! deliveries, leases claimed for receives that went away) taken at once and settled on a
//! pooled connection, the acks in one statement. Up to `Options::acks_in_flight` batches run
//! at once: an ack runs one in its own task when a slot is free (no hop to another task and
//! back, the costly part on a busy machine), and the settler task runs the rest (hand-backs
//! come from `Drop`, which cannot wait). A batch that fails is queued again (after a pause).
//!
//! **Told acks wait for each other.** Of those batches, at most half (rounded up: 2 of 4)
//! carry acks of rows claimed with a graph node (the told ack, `ack_plain.rs`); while they
//! run, the told acks queued stay queued and the next batches take only the rest. A told
//! statement's fixed work (its `graph_told` call: two statements planned and started, about
//! 0.2 to 0.3 ms) is paid per statement, not per row, so told acks taken together cost
//! less per row, and a fan-out's children are acked in fewer, larger statements (fewer
//! commits). The bare acks of jobs without dependencies are not held back. The limit is a
//! cost bound only: a plain-flagged ack that the bare statement refused is told in its own
//! batch (`ack_plain::run`), slot or not.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use leaseq_async::{SettleError, StoreError};
use leaseq_core::Failure;

use crate::board::Board;
use crate::counters::Counters;
use crate::db::Db;
use crate::leases::Leases;
use crate::life::Life;
use crate::pushes::Pushes;
use crate::settle::{self, Settling};
use crate::settles::{AckOp, Settles};
use crate::ticket::PgTicket;

/// The settling job and the parts it uses: it owns the settle queue ([`Settles`]) and the
/// count of batches running (`running`, taken and given back by [`Settler::flush_here`] in
/// acking tasks and by the settler task); a batch touches what a settle touches
/// ([`Settling`]).
pub(crate) struct Settler<T: 'static> {
    pub(crate) db: Arc<Db<T>>,
    pub(crate) life: Arc<Life>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) leases: Arc<Leases>,
    pub(crate) pushes: Arc<Pushes>,
    pub(crate) board: Arc<Board<T>>,
    pub(crate) settles: Arc<Settles>,
    /// Settling batches running now (at most `acks_in_flight`).
    pub(crate) running: AtomicUsize,
    /// Of those, the batches carrying told acks (at most [`Settler::told_max`]).
    pub(crate) told_running: AtomicUsize,
}

/// One batch of settling work.
#[derive(Default)]
struct Work {
    acks: Vec<AckOp>,
    hand_backs: Vec<PgTicket>,
    unclaims: Vec<(i64, i64)>,
    put_backs: Vec<(i64, i64)>,
    /// It holds a told slot (`told_running`), given back when it ends.
    told: bool,
}

impl Work {
    /// Everything queued now, if anything is; but the told acks (claimed with a node) only
    /// if `told_slot` grants a slot for them (asked only when some are queued), else they
    /// stay queued, in order.
    fn take(settles: &Settles, told_slot: impl FnOnce() -> bool) -> Option<Work> {
        let mut q = settles.queue.lock();
        if q.is_empty() {
            return None;
        }
        // One pass: with no told ack queued, every ack goes (no slot asked, no split).
        let any_told = q.acks.iter().any(|a| !a.plain);
        let told = any_told && told_slot();
        let acks = if told || !any_told {
            std::mem::take(&mut q.acks)
        } else {
            let (plain, kept) = std::mem::take(&mut q.acks)
                .into_iter()
                .partition(|a| a.plain);
            q.acks = kept;
            plain
        };
        let work = Work {
            acks,
            hand_backs: std::mem::take(&mut q.hand_backs),
            unclaims: std::mem::take(&mut q.unclaims),
            put_backs: std::mem::take(&mut q.put_backs),
            told,
        };
        let empty = work.acks.is_empty()
            && work.hand_backs.is_empty()
            && work.unclaims.is_empty()
            && work.put_backs.is_empty();
        (!empty).then_some(work)
    }

    /// Whether `take` would take something now (told acks only if `told` slots are free).
    fn takeable(settles: &Settles, told: bool) -> bool {
        let q = settles.queue.lock();
        !q.hand_backs.is_empty()
            || !q.unclaims.is_empty()
            || !q.put_backs.is_empty()
            || q.acks.iter().any(|a| told || a.plain)
    }

    /// Queues it again, in front of what came since.
    fn requeue(self, settles: &Settles) {
        let mut q = settles.queue.lock();
        q.acks.splice(0..0, self.acks);
        q.hand_backs.splice(0..0, self.hand_backs);
        q.unclaims.splice(0..0, self.unclaims);
        q.put_backs.splice(0..0, self.put_backs);
    }
}

impl<T: Send + 'static> Settler<T> {
    /// What a settle touches, borrowed from the settler's parts.
    pub(crate) fn parts(&self) -> Settling<'_, T> {
        Settling {
            db: &self.db,
            counters: &self.counters,
            leases: &self.leases,
            pushes: &self.pushes,
            board: &self.board,
        }
    }

    /// Whether nothing is queued.
    fn idle(&self) -> bool {
        self.settles.queue.lock().is_empty()
    }

    /// Completes once nothing queued before it (acks, hand-backs, put-backs, unclaims)
    /// waits for the settler and no batch runs: what a closed queue's `synced` (its
    /// `Closing`) waits for besides the pushes, so that a process that stops puts its leases
    /// back in the table before it exits (else they come back only when they run out, their
    /// attempt counted). Gives up, outcome unknown, after `Options::commit_timeout` (what is
    /// queued stays queued). Polled every few milliseconds: it runs once, at close.
    pub(crate) async fn drained(&self) -> Result<(), StoreError> {
        let start = std::time::Instant::now();
        let timeout = self.db.options.commit_timeout;
        loop {
            if self.idle() && self.running.load(Ordering::Acquire) == 0 {
                return Ok(());
            }
            if start.elapsed() >= timeout {
                let last = self.db.last_error.lock().clone().unwrap_or_default();
                return Err(StoreError::outcome_unknown(format!(
                    "leases given back were not settled within {timeout:?} (they stay queued; \
                     last error: {last})"
                )));
            }
            self.settles.wake.notify(1);
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// The settler task: runs batches while fewer than `acks_in_flight` run (in callers'
    /// tasks or here), until the store is gone and nothing is queued.
    pub(crate) async fn run(self: Arc<Self>) {
        let mut batches = FuturesUnordered::new();
        loop {
            let listener = self.settles.wake.listen();
            while self.enter() {
                let Some(work) = Work::take(&self.settles, || self.enter_told()) else {
                    self.leave();
                    break;
                };
                batches.push(self.clone().run_batch(work));
            }
            if batches.is_empty() {
                if self.life.is_stopped() && self.idle() {
                    return;
                }
                listener.await;
                continue;
            }
            tokio::select! {
                Some(()) = batches.next() => {}
                _ = listener => {}
            }
        }
    }

    /// Settles what is queued in the caller's own task (an ack waiting for its result), as
    /// long as fewer than `acks_in_flight` batches run: no hop to the settler task and
    /// back. A batch this future started finishes even if the future is dropped (it is
    /// handed to a task).
    pub(crate) async fn flush_here(self: &Arc<Self>) {
        while self.enter() {
            let Some(work) = Work::take(&self.settles, || self.enter_told()) else {
                self.leave();
                return;
            };
            Detached(Some(Box::pin(self.clone().run_batch(work)))).await;
        }
    }

    /// Takes a batch slot if one of `acks_in_flight` is free.
    fn enter(&self) -> bool {
        let max = self.db.options.acks_in_flight.max(1);
        self.running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    /// Gives a batch slot back; whatever was queued meanwhile and may be taken now is the
    /// settler task's to take (told acks waiting for a told slot are rung for when one is
    /// given back: no wake-up that would find nothing to take).
    fn leave(&self) {
        self.running.fetch_sub(1, Ordering::AcqRel);
        if Work::takeable(&self.settles, self.told_free()) {
            self.settles.wake.notify(1);
        }
    }

    /// The most batches carrying told acks at once: half of `acks_in_flight`, rounded up
    /// (see the file's header).
    fn told_max(&self) -> usize {
        self.db.options.acks_in_flight.max(1).div_ceil(2)
    }

    /// Takes a told slot if one is free.
    fn enter_told(&self) -> bool {
        let max = self.told_max();
        self.told_running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    /// Whether a told slot is free now.
    fn told_free(&self) -> bool {
        self.told_running.load(Ordering::Acquire) < self.told_max()
    }

    /// One batch from start to end, its slots given back (the told one first, so that
    /// `leave` sees it free); failed work queued again.
    async fn run_batch(self: Arc<Self>, work: Work) {
        let told = work.told;
        let failed = self.settle(work).await;
        if let Some(work) = failed {
            work.requeue(&self.settles);
        }
        if told {
            self.told_running.fetch_sub(1, Ordering::AcqRel);
        }
        self.leave();
    }
}

/// A batch future that, dropped before it ended, is spawned to finish on its own.
struct Detached(Option<Pin<Box<dyn Future<Output = ()> + Send>>>);

impl Future for Detached {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(f) = self.0.as_mut() else {
            return Poll::Ready(());
        };
        let done = f.as_mut().poll(cx);
        if done.is_ready() {
            self.0 = None;
        }
        done
    }
}

impl Drop for Detached {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(f);
            }
        }
    }
}

impl<T: Send + 'static> Settler<T> {
    /// Settles one batch; what could not be done comes back (after a pause) to be queued
    /// again.
    async fn settle(&self, mut work: Work) -> Option<Work> {
        let db = &*self.db;
        let pause = Duration::from_millis(20);
        let client = match db.client().await {
            Ok(c) => c,
            Err(e) => {
                give_up_late_acks(
                    db,
                    &mut work.acks,
                    &leaseq_async::ErrorChain(&e).to_string(),
                );
                db.failed("settle", e);
                tokio::time::sleep(pause).await;
                return Some(work);
            }
        };
        if !work.acks.is_empty() {
            let acks = std::mem::take(&mut work.acks);
            if let Err((e, acks)) = settle::ack_batch(self.parts(), &client, acks).await {
                work.acks = acks;
                give_up_late_acks(
                    db,
                    &mut work.acks,
                    &leaseq_async::ErrorChain(&e).to_string(),
                );
                db.failed("ack", e);
                tokio::time::sleep(pause).await;
                return Some(work);
            }
            crate::upkeep::vacuum_if_due(&self.db, &self.counters);
        }
        if !work.unclaims.is_empty() || !work.put_backs.is_empty() {
            let (unclaims, put_backs) = (&work.unclaims, &work.put_backs);
            let (counters, board) = (&*self.counters, &*self.board);
            crate::claim::unclaim(db, counters, board, &client, unclaims, put_backs).await;
        }
        for ticket in work.hand_backs {
            // Best effort: if this fails, the lease runs out and the item comes back then.
            let _ = settle::fail(self.parts(), &client, ticket, Failure::dropped()).await;
        }
        None
    }
}

/// Answers the acks that have waited `Options::commit_timeout` through failures: not done
/// if no try of theirs may have been made, outcome unknown otherwise. The rest are kept.
fn give_up_late_acks<T>(db: &Db<T>, acks: &mut Vec<AckOp>, last: &str) {
    let timeout = db.options.commit_timeout;
    let (late, kept): (Vec<AckOp>, Vec<AckOp>) = std::mem::take(acks)
        .into_iter()
        .partition(|a| a.since.elapsed() >= timeout);
    *acks = kept;
    for a in late {
        let e = if a.resent {
            crate::outcome::unknown("ack", last)
        } else {
            StoreError::not_done(format!("ack: failed for {timeout:?}: {last}"))
        };
        let _ = a.reply.send(Err(SettleError::Store(e)));
    }
}

#[cfg(test)]
#[path = "settler_tests.rs"]
mod tests;
