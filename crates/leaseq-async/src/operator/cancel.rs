//! The bulk cancel, written once for every store's operator: the waiting items a
//! [`LiveQuery`] takes, listed through the operator's own reads a page at a time in id
//! order, each cancelled through the queue's [`cancel`](LeaseQueue::cancel) (so that the
//! store records and counts it as any cancel).

use std::future::Future;

use leaseq_core::MessageId;

use crate::admin_error::AdminError;
use crate::page::Page;
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;
use crate::store::Store;

use super::{LiveQuery, Operator, OperatorError};

/// Items listed per read.
const PAGE: usize = 1000;

/// Calls `f` with the id of each waiting item of `queue` that `query` takes, in id order,
/// reading [`Operator::items`] a page at a time from the range's start; returns how many
/// calls answered `true`.
pub(super) async fn each_listed<O, F, Fut>(
    op: &O,
    queue: &str,
    query: &LiveQuery,
    mut f: F,
) -> Result<u64, OperatorError>
where
    O: Operator + ?Sized,
    F: FnMut(MessageId) -> Fut,
    Fut: Future<Output = Result<bool, OperatorError>>,
{
    let mut page = match query.min_id.and_then(|min| min.get().checked_sub(1)) {
        Some(before) => Page::first(PAGE).next(MessageId::new(before)),
        None => Page::first(PAGE),
    };
    let mut n = 0;
    loop {
        let items = op.items(queue, page).await?;
        for item in items.iter().filter(|i| query.admits(i)) {
            if f(item.id).await? {
                n += 1;
            }
        }
        match items.last() {
            Some(last) if items.len() >= PAGE && query.reaches_past(last.id) => {
                page = Page::first(PAGE).next(last.id);
            }
            _ => return Ok(n),
        }
    }
}

/// Cancels the waiting items of `queue` that `query` takes, listed through `op`, each
/// through `q` (the same queue, opened for the action): what a store's
/// [`Operator::cancel`] runs. An item the queue refuses to cancel (it went in flight, was
/// settled or dead-lettered since it was listed) is skipped, not counted; a store failure
/// ends it (the items before it stay cancelled). Returns how many were cancelled.
///
/// Each cancel is one store call (a commit on SQLite, a statement on Postgres) and finds
/// its item by id as [`LeaseQueue::cancel`] does: meant for operator tools, not a hot path.
pub async fn cancel_matching<O, R, S>(
    op: &O,
    queue: &str,
    query: &LiveQuery,
    q: &LeaseQueue<Vec<u8>, R, S>,
) -> Result<u64, OperatorError>
where
    O: Operator + ?Sized,
    R: Runtime,
    S: Store<Vec<u8>, Runtime = R>,
{
    each_listed(op, queue, query, |id| async move {
        match q.cancel(id).await {
            Ok(_) => Ok(true),
            Err(AdminError::Refused(_)) => Ok(false),
            Err(AdminError::Store(e)) => Err(OperatorError::store(&e)),
        }
    })
    .await
}
