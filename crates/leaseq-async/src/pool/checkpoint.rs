//! What a pool handler's [`Job`](crate::Job) reaches from its worker: the runtime's clock
//! (for `time_left`), the store (for checkpoints) and the pool's stop (for `stopping`), as
//! one trait object made once per worker, so a job costs one reference count as it did for
//! the clock alone. A checkpoint
//! carries a copy of the job's lease key ([`LeaseKey`]) while the worker keeps the
//! delivery; the store's fencing refuses the key once the lease is over, so a job kept past
//! its handling changes nothing.

use std::marker::PhantomData;
use std::sync::Arc;

use leaseq_core::Timestamp;

use crate::progress::{LeaseKey, Progress};
use crate::runtime::Runtime;
use crate::stop::Stop;
use crate::store::{Checkpointing, Store};

/// The clock and the store, as a job sees them. Not generic over the item type, so that a
/// router's job keeps it when it swaps its envelope for the decoded args.
pub(crate) trait JobContext: Send + Sync {
    /// The runtime's clock.
    fn now(&self) -> Timestamp;
    /// [`Store::checkpoint`].
    fn checkpoint(&self, lease: LeaseKey, progress: Progress) -> Checkpointing;
    /// The pool's stop request.
    fn stop(&self) -> &Arc<Stop>;
}

/// A worker's [`JobContext`], for a store of `T`s.
pub(crate) struct WorkerContext<T, R, S> {
    pub(crate) rt: R,
    pub(crate) store: Arc<S>,
    pub(crate) stop: Arc<Stop>,
    pub(crate) items: PhantomData<fn() -> T>,
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> JobContext for WorkerContext<T, R, S> {
    fn now(&self) -> Timestamp {
        self.rt.now()
    }

    fn checkpoint(&self, lease: LeaseKey, progress: Progress) -> Checkpointing {
        self.store.checkpoint(lease, progress)
    }

    fn stop(&self) -> &Arc<Stop> {
        &self.stop
    }
}
