//! How a pool handler's [`Job`](crate::Job) reaches its store for checkpoints while its
//! worker keeps the delivery: the job holds the store (type-erased, as a job knows only its
//! item type; one reference count per item, the store's `Arc` made into a trait object once
//! per worker) and a copy of its lease's key ([`LeaseKey`]); the store's fencing refuses
//! the key once the lease is over, so a job kept past its handling changes nothing.

use crate::progress::{LeaseKey, Progress};
use crate::store::{Checkpointing, Store};

/// A store as a job's checkpoints see it.
pub(crate) trait Sink<T>: Send + Sync {
    /// [`Store::checkpoint`].
    fn checkpoint(&self, lease: LeaseKey, progress: Progress) -> Checkpointing;
}

impl<T, S: Store<T>> Sink<T> for S {
    fn checkpoint(&self, lease: LeaseKey, progress: Progress) -> Checkpointing {
        Store::checkpoint(self, lease, progress)
    }
}
