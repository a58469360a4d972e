//! The settler task: takes everything queued for it (acks of all workers, hand-backs of
//! dropped deliveries, leases claimed for receives that went away) and settles it on a
//! pooled connection, the acks in one statement. Up to `Options::acks_in_flight` batches run
//! at once, so a worker's ack does not wait behind another batch's commit. Runs until the
//! store is gone and nothing is queued; a batch that fails is queued again (after a pause).

use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use leaseq_core::Failure;

use crate::settle::{self, AckOp};
use crate::store::{PgTicket, Shared};

/// One batch of settling work.
#[derive(Default)]
struct Work {
    acks: Vec<AckOp>,
    hand_backs: Vec<PgTicket>,
    unclaims: Vec<(i64, i64)>,
}

impl Work {
    /// Everything queued now, if anything is.
    fn take<T>(shared: &Shared<T>) -> Option<Work> {
        let mut q = shared.settles.lock();
        if q.acks.is_empty() && q.hand_backs.is_empty() && q.unclaims.is_empty() {
            return None;
        }
        Some(Work {
            acks: std::mem::take(&mut q.acks),
            hand_backs: std::mem::take(&mut q.hand_backs),
            unclaims: std::mem::take(&mut q.unclaims),
        })
    }

    /// Queues it again, in front of what came since.
    fn requeue<T>(self, shared: &Shared<T>) {
        let mut q = shared.settles.lock();
        q.acks.splice(0..0, self.acks);
        q.hand_backs.splice(0..0, self.hand_backs);
        q.unclaims.splice(0..0, self.unclaims);
    }
}

/// The settler task.
pub(crate) async fn run<T: Send + 'static>(shared: Arc<Shared<T>>) {
    let mut batches = FuturesUnordered::new();
    loop {
        let listener = shared.settle_queued.listen();
        while batches.len() < shared.options.acks_in_flight.max(1) {
            let Some(work) = Work::take(&shared) else {
                break;
            };
            batches.push(settle(shared.clone(), work));
        }
        if batches.is_empty() {
            if shared.is_stopped() {
                return;
            }
            listener.await;
            continue;
        }
        tokio::select! {
            Some(failed) = batches.next() => {
                if let Some(work) = failed {
                    work.requeue(&shared);
                }
            }
            _ = listener => {}
        }
    }
}

/// Settles one batch; what could not be done comes back (after a pause) to be queued again.
async fn settle<T>(shared: Arc<Shared<T>>, mut work: Work) -> Option<Work> {
    let pause = Duration::from_millis(20);
    let client = match shared.client().await {
        Ok(c) => c,
        Err(e) => {
            shared.failed("settle", e);
            tokio::time::sleep(pause).await;
            return Some(work);
        }
    };
    if !work.acks.is_empty() {
        let acks = std::mem::take(&mut work.acks);
        if let Err((e, acks)) = settle::ack_batch(&shared, &client, acks).await {
            shared.failed("ack", e);
            work.acks = acks;
            tokio::time::sleep(pause).await;
            return Some(work);
        }
    }
    if !work.unclaims.is_empty() {
        crate::claim::unclaim(&shared, &client, &work.unclaims).await;
    }
    for ticket in work.hand_backs {
        // Best effort: if this fails, the lease runs out and the item comes back then.
        let _ = settle::fail(&shared, &client, ticket, Failure::dropped()).await;
    }
    None
}
