//! Settling batches: everything queued (acks of all workers, hand-backs of dropped
//! deliveries, leases claimed for receives that went away) taken at once and settled on a
//! pooled connection, the acks in one statement. Up to `Options::acks_in_flight` batches run
//! at once: an ack runs one in its own task when a slot is free (no hop to another task and
//! back, the costly part on a busy machine), and the settler task runs the rest (hand-backs
//! come from `Drop`, which cannot wait). A batch that fails is queued again (after a pause).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use leaseq_async::{SettleError, StoreError};
use leaseq_core::Failure;

use crate::settle::{self, AckOp};
use crate::store::{PgTicket, Shared};

/// One batch of settling work.
#[derive(Default)]
struct Work {
    acks: Vec<AckOp>,
    hand_backs: Vec<PgTicket>,
    unclaims: Vec<(i64, i64)>,
    put_backs: Vec<(i64, i64)>,
}

impl Work {
    /// Whether nothing is queued.
    fn is_empty<T>(shared: &Shared<T>) -> bool {
        let q = shared.settles.lock();
        q.acks.is_empty()
            && q.hand_backs.is_empty()
            && q.unclaims.is_empty()
            && q.put_backs.is_empty()
    }

    /// Everything queued now, if anything is.
    fn take<T>(shared: &Shared<T>) -> Option<Work> {
        let mut q = shared.settles.lock();
        if q.acks.is_empty()
            && q.hand_backs.is_empty()
            && q.unclaims.is_empty()
            && q.put_backs.is_empty()
        {
            return None;
        }
        Some(Work {
            acks: std::mem::take(&mut q.acks),
            hand_backs: std::mem::take(&mut q.hand_backs),
            unclaims: std::mem::take(&mut q.unclaims),
            put_backs: std::mem::take(&mut q.put_backs),
        })
    }

    /// Queues it again, in front of what came since.
    fn requeue<T>(self, shared: &Shared<T>) {
        let mut q = shared.settles.lock();
        q.acks.splice(0..0, self.acks);
        q.hand_backs.splice(0..0, self.hand_backs);
        q.unclaims.splice(0..0, self.unclaims);
        q.put_backs.splice(0..0, self.put_backs);
    }
}

/// The settler task: runs batches while fewer than `acks_in_flight` run (in callers'
/// tasks or here), until the store is gone and nothing is queued.
pub(crate) async fn run<T: Send + 'static>(shared: Arc<Shared<T>>) {
    let mut batches = FuturesUnordered::new();
    loop {
        let listener = shared.settle_queued.listen();
        while enter(&shared) {
            let Some(work) = Work::take(&shared) else {
                leave(&shared);
                break;
            };
            batches.push(run_batch(shared.clone(), work));
        }
        if batches.is_empty() {
            if shared.is_stopped() && Work::is_empty(&shared) {
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

/// Settles what is queued in the caller's own task (an ack waiting for its result), as long
/// as fewer than `acks_in_flight` batches run: no hop to the settler task and back. A batch
/// this future started finishes even if the future is dropped (it is handed to a task).
pub(crate) async fn flush_here<T: Send + 'static>(shared: &Arc<Shared<T>>) {
    while enter(shared) {
        let Some(work) = Work::take(shared) else {
            leave(shared);
            return;
        };
        Detached(Some(Box::pin(run_batch(shared.clone(), work)))).await;
    }
}

/// Takes a batch slot if one of `acks_in_flight` is free.
fn enter<T>(shared: &Shared<T>) -> bool {
    let max = shared.options.acks_in_flight.max(1);
    shared
        .settling
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < max).then_some(n + 1)
        })
        .is_ok()
}

/// Gives a batch slot back; whatever was queued meanwhile is the settler task's to take.
fn leave<T>(shared: &Shared<T>) {
    shared.settling.fetch_sub(1, Ordering::AcqRel);
    if !Work::is_empty(shared) {
        shared.settle_queued.notify(1);
    }
}

/// One batch from start to end, its slot given back; failed work queued again.
async fn run_batch<T: Send + 'static>(shared: Arc<Shared<T>>, work: Work) {
    let failed = settle(shared.clone(), work).await;
    if let Some(work) = failed {
        work.requeue(&shared);
    }
    leave(&shared);
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

/// Settles one batch; what could not be done comes back (after a pause) to be queued again.
async fn settle<T: Send + 'static>(shared: Arc<Shared<T>>, mut work: Work) -> Option<Work> {
    let pause = Duration::from_millis(20);
    let client = match shared.client().await {
        Ok(c) => c,
        Err(e) => {
            give_up_late_acks(
                &shared,
                &mut work.acks,
                &leaseq_async::ErrorChain(&e).to_string(),
            );
            shared.failed("settle", e);
            tokio::time::sleep(pause).await;
            return Some(work);
        }
    };
    if !work.acks.is_empty() {
        let acks = std::mem::take(&mut work.acks);
        if let Err((e, acks)) = settle::ack_batch(&shared, &client, acks).await {
            work.acks = acks;
            give_up_late_acks(
                &shared,
                &mut work.acks,
                &leaseq_async::ErrorChain(&e).to_string(),
            );
            shared.failed("ack", e);
            tokio::time::sleep(pause).await;
            return Some(work);
        }
        crate::upkeep::vacuum_if_due(&shared);
    }
    if !work.unclaims.is_empty() || !work.put_backs.is_empty() {
        crate::claim::unclaim(&shared, &client, &work.unclaims, &work.put_backs).await;
    }
    for ticket in work.hand_backs {
        // Best effort: if this fails, the lease runs out and the item comes back then.
        let _ = settle::fail(&shared, &client, ticket, Failure::dropped()).await;
    }
    None
}

/// Answers the acks that have waited `Options::commit_timeout` through failures: not done
/// if no try of theirs may have been made, outcome unknown otherwise. The rest are kept.
fn give_up_late_acks<T>(shared: &Shared<T>, acks: &mut Vec<AckOp>, last: &str) {
    let timeout = shared.options.commit_timeout;
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
