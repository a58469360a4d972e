//! How a pool handler's [`Job`](crate::Job) records a checkpoint while the pool keeps the
//! delivery: each worker has one [`LeaseSlot`], made once, holding the delivery its handler
//! works on; the job holds the slot (type-erased, as a job knows only its item type) and
//! the turn it was made for, so a job kept past its handling (moved into a task, say) can
//! never checkpoint a later lease of its worker, even of the same item.
//!
//! Per item this costs the worker two uncontended lock round trips (the delivery in, then
//! out) and the job one reference count; a checkpoint itself one boxed future (`Store::checkpoint`'s).

use leaseq_core::{MessageId, ReceiptError};
use parking_lot::Mutex;

use crate::delivery::Delivery;
use crate::progress::Progress;
use crate::runtime::Runtime;
use crate::store::{Checkpointing, Store};

/// What a job reaches its lease through.
pub(crate) trait Checkpoints: Send + Sync {
    /// Starts recording `progress` on the lease of turn `turn` (refused, `Released`, once the
    /// worker took its delivery back).
    fn checkpoint(
        &self,
        turn: u64,
        id: MessageId,
        progress: Progress,
    ) -> Result<Checkpointing, ReceiptError>;

    /// The store's last checkpoint of the lease of turn `turn` (none once it is over).
    fn progress(&self, turn: u64) -> Option<Progress>;

    /// `progress` was recorded on the lease of turn `turn`: its delivery remembers it.
    fn recorded(&self, turn: u64, progress: Progress);
}

/// A worker's delivery while its handler runs, numbered by turn.
pub(crate) struct LeaseSlot<T, R: Runtime, S: Store<T, Runtime = R>> {
    held: Mutex<Held<T, R, S>>,
}

/// The turn of the last delivery put in, and that delivery until it is taken back.
type Held<T, R, S> = (u64, Option<Delivery<T, R, S>>);

impl<T, R: Runtime, S: Store<T, Runtime = R>> LeaseSlot<T, R, S> {
    pub(crate) fn new() -> Self {
        LeaseSlot {
            held: Mutex::new((0, None)),
        }
    }

    /// Holds `delivery` while its handler runs; returns its turn.
    #[inline]
    pub(crate) fn put(&self, delivery: Delivery<T, R, S>) -> u64 {
        let mut held = self.held.lock();
        held.0 += 1;
        held.1 = Some(delivery);
        held.0
    }

    /// The delivery back, once its handler is done.
    #[inline]
    pub(crate) fn take(&self) -> Option<Delivery<T, R, S>> {
        self.held.lock().1.take()
    }
}

impl<T: Send + 'static, R: Runtime, S: Store<T, Runtime = R>> Checkpoints for LeaseSlot<T, R, S> {
    fn checkpoint(
        &self,
        turn: u64,
        id: MessageId,
        progress: Progress,
    ) -> Result<Checkpointing, ReceiptError> {
        let held = self.held.lock();
        match &held.1 {
            Some(delivery) if held.0 == turn => delivery.checkpoint_future(progress),
            _ => Err(ReceiptError::Released(id)),
        }
    }

    fn progress(&self, turn: u64) -> Option<Progress> {
        let held = self.held.lock();
        match &held.1 {
            Some(delivery) if held.0 == turn => delivery.progress(),
            _ => None,
        }
    }

    fn recorded(&self, turn: u64, progress: Progress) {
        let mut held = self.held.lock();
        if held.0 == turn {
            if let Some(delivery) = held.1.as_mut() {
                delivery.remember(progress);
            }
        }
    }
}
