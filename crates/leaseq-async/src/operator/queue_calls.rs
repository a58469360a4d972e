//! An operator's actions on a queue handle, written once: the SQLite and Postgres operators
//! (which open a queue on the store for an action) and [`LocalOperator`](super::LocalOperator)
//! (which holds the process's own) act through these, each answer worded as an
//! [`OperatorError`].

use leaseq_core::MessageId;

use super::OperatorError;
use crate::admin_error::AdminError;
use crate::dead_filter::DeadFilter;
use crate::error_chain::ErrorChain;
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;
use crate::store::Store;

/// A store's failure, as an operator says it (its whole chain of causes).
pub fn failed(e: impl std::error::Error) -> OperatorError {
    OperatorError::store(&e)
}

/// Puts the dead letter `id` back ([`LeaseQueue::redrive`]); the queue's refusal (no such
/// dead letter, its time to live over, its key held, the queue full) is
/// [`OperatorError::Refused`], in words.
pub async fn redrive<T, R: Runtime, S: Store<T, Runtime = R>>(
    q: &LeaseQueue<T, R, S>,
    id: MessageId,
) -> Result<(), OperatorError> {
    match q.redrive(id).await {
        Ok(_) => Ok(()),
        Err(AdminError::Refused(e)) => Err(OperatorError::Refused(ErrorChain(&e).to_string())),
        Err(AdminError::Store(e)) => Err(failed(e)),
    }
}

/// Puts back the dead letters `filter` takes; how many went.
pub async fn redrive_dead<T, R: Runtime, S: Store<T, Runtime = R>>(
    q: &LeaseQueue<T, R, S>,
    filter: DeadFilter<T>,
) -> Result<u64, OperatorError> {
    q.redrive_matching(filter).await.map_err(failed)
}

/// Deletes the dead letters `filter` takes; how many.
pub async fn purge_dead<T, R: Runtime, S: Store<T, Runtime = R>>(
    q: &LeaseQueue<T, R, S>,
    filter: DeadFilter<T>,
) -> Result<u64, OperatorError> {
    q.purge_dead_matching(filter).await.map_err(failed)
}

/// Deletes every ready and delayed item; how many.
pub async fn purge<T, R: Runtime, S: Store<T, Runtime = R>>(
    q: &LeaseQueue<T, R, S>,
) -> Result<u64, OperatorError> {
    q.purge().await.map_err(failed)
}

/// Pauses (`paused`) or resumes the queue; whether the flag changed.
pub async fn set_paused<T, R: Runtime, S: Store<T, Runtime = R>>(
    q: &LeaseQueue<T, R, S>,
    paused: bool,
) -> Result<bool, OperatorError> {
    let done = if paused {
        q.pause().await
    } else {
        q.resume().await
    };
    done.map_err(failed)
}
