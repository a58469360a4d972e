//! One leased item, settled by consuming it.

use std::sync::Arc;
use std::time::Duration;

use leaseq_core::{
    Acked, Extended, Failure, Lease, MessageId, Nacked, Queue, Receipt, ReceiptError, Timestamp,
};

use crate::beats::BeatKey;
use crate::lease_lost::{LeaseLost, LeaseSignal};
use crate::runtime::Runtime;
use crate::shared::{Shared, State};

/// An item on lease from a [`LeaseQueue`](crate::LeaseQueue).
///
/// Settle it with [`ack`](Self::ack) when the work is done, or hand it back with
/// [`nack`](Self::nack) / [`nack_with`](Self::nack_with), or declare it poison with
/// [`dead_letter`](Self::dead_letter); each consumes the delivery. A delivery dropped
/// unsettled (a panic, a cancelled task, an early return) goes back to the queue at once with
/// reason [`Dropped`](leaseq_core::Reason::Dropped), and that counts as an attempt.
///
/// A settle with a stale receipt (the lease ran out and the item went to someone else) is a
/// typed [`ReceiptError`], never a panic.
///
/// ```
/// use std::time::Duration;
/// use leaseq_async::{Config, LeaseQueue, Nacked, Reason, SimRuntime};
///
/// let rt = SimRuntime::new();
/// rt.block_on({
///     let rt = rt.clone();
///     async move {
///         let queue = LeaseQueue::with_runtime(rt, Config::new(Duration::from_secs(5)).with_max_attempts(3))
///             .unwrap();
///         queue.push(17u32).unwrap();
///
///         // Dropped unsettled (say, the task was cancelled): back at once, attempt counted.
///         drop(queue.receive().await.unwrap());
///         let d = queue.receive().await.unwrap();
///         assert_eq!(d.attempt(), 2);
///
///         // A retryable failure: back after the backoff, with the error recorded.
///         assert!(matches!(d.nack("disk full").unwrap(), Nacked::Retrying { .. }));
///
///         // Poison: straight to the dead letters.
///         let d = queue.receive().await.unwrap();
///         d.dead_letter("malformed payload").unwrap();
///         let dead = queue.take_dead_letters();
///         assert_eq!(dead[0].reason, Reason::Terminated);
///         assert_eq!(dead[0].last_error.as_deref(), Some("malformed payload"));
///     }
/// });
/// ```
pub struct Delivery<T, R: Runtime> {
    shared: Arc<Shared<T, R>>,
    /// `None` only once a pool has moved the item into its handler's `Job`.
    item: Option<T>,
    id: MessageId,
    receipt: Receipt,
    attempt: u32,
    deadline: Timestamp,
    expires_at: Option<Timestamp>,
    beat: Option<(BeatKey, Arc<LeaseSignal>)>,
    settled: bool,
}

impl<T, R: Runtime> Delivery<T, R> {
    pub(crate) fn new(
        shared: Arc<Shared<T, R>>,
        lease: Lease<T>,
        beat: Option<(BeatKey, Arc<LeaseSignal>)>,
    ) -> Self {
        Delivery {
            shared,
            item: Some(lease.item),
            id: lease.id,
            receipt: lease.receipt,
            attempt: lease.attempt,
            deadline: lease.deadline,
            expires_at: lease.expires_at,
            beat,
            settled: false,
        }
    }

    /// The queue this delivery belongs to.
    pub(crate) fn shared(&self) -> &Arc<Shared<T, R>> {
        &self.shared
    }

    /// The item (this delivery's own copy: the queue keeps another until it is acked).
    pub fn item(&self) -> &T {
        self.item
            .as_ref()
            .expect("only a pool takes the item, and it never asks again")
    }

    /// Moves the item out, for a pool's `Job`: the delivery keeps its lease and still
    /// settles (or goes back when dropped).
    pub(crate) fn take_item(&mut self) -> Option<T> {
        self.item.take()
    }

    /// The message id, the same on every delivery of this item.
    pub fn id(&self) -> MessageId {
        self.id
    }

    /// 1 on the first delivery, 2 on the second, ...
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The receipt of this lease.
    pub fn receipt(&self) -> Receipt {
        self.receipt
    }

    /// When the lease ends unless extended (by [`extend`](Self::extend); heartbeat
    /// extensions are not reflected here).
    pub fn deadline(&self) -> Timestamp {
        self.deadline
    }

    /// The item's own deadline, if it was pushed with a time to live.
    pub fn expires_at(&self) -> Option<Timestamp> {
        self.expires_at
    }

    /// Whether the heartbeat keeps this lease alive.
    pub fn has_heartbeat(&self) -> bool {
        self.beat.is_some()
    }

    /// Whether the lease is known to be lost: the heartbeat was refused or hit the max lease
    /// lifetime, or (without a heartbeat) the deadline has passed.
    pub fn is_lease_lost(&self) -> bool {
        match &self.beat {
            Some((_, signal)) => signal.is_lost(),
            None => self.shared.rt.now() >= self.deadline,
        }
    }

    /// Completes when the lease is lost, so that a handler can stop work that will be redone
    /// elsewhere. With a heartbeat that is when an extension is refused or the max lease
    /// lifetime is reached; without one, at the deadline.
    pub fn lease_lost(&self) -> LeaseLost {
        match &self.beat {
            Some((_, signal)) => LeaseLost::heartbeat(signal.clone()),
            None => LeaseLost::at_deadline(Box::pin(self.shared.rt.sleep_until(self.deadline))),
        }
    }

    /// Done: removes the item from the queue for good.
    ///
    /// Judged on a clock reading taken at this call: an ack after the deadline is late by
    /// exactly the time since it, and is accepted as [`Acked::LateUnclaimed`] if nobody else
    /// has leased the item since, whether or not the queue's driver has run in between.
    pub fn ack(mut self) -> Result<Acked, ReceiptError> {
        let now = self.shared.rt.now();
        // The queue's copy of the item comes out of the core and is dropped here, after the
        // lock is released: an item's `Drop` never runs under it.
        let (acked, _item) = self.settle(|core, r| core.ack_take(r, now))?;
        Ok(acked)
    }

    /// Hands the item back with an error: it is delivered again after the backoff, or
    /// dead-lettered if this was its last attempt.
    pub fn nack(self, error: impl Into<String>) -> Result<Nacked, ReceiptError> {
        self.nack_with(Failure::error(error))
    }

    /// Hands the item back with any [`Failure`] (reason, error, retry delay).
    pub fn nack_with(mut self, failure: Failure) -> Result<Nacked, ReceiptError> {
        self.hand_back(failure)
    }

    /// Nacks under the lock, then wakes a receiver or re-arms the reaper for the item's
    /// return.
    fn hand_back(&mut self, failure: Failure) -> Result<Nacked, ReceiptError> {
        let now = self.shared.rt.now();
        self.settled = true;
        let beat = self.beat.take();
        let shared = &self.shared;
        let mut st = shared.lock();
        #[cfg(feature = "tracing")]
        let reason = failure.reason;
        let r = settle_in(shared, &mut st, beat, self.receipt, |core, r| {
            core.nack(r, now, failure)
        });
        #[cfg(feature = "tracing")]
        match r {
            Ok(Nacked::DeadLettered { attempts }) => {
                tracing::warn!(id = %self.id, attempts, %reason, "leaseq: item dead-lettered")
            }
            Ok(_) => tracing::debug!(id = %self.id, %reason, "leaseq: item handed back"),
            Err(ref e) => tracing::debug!(id = %self.id, error = %e, "leaseq: stale hand-back"),
        }
        // A later return re-arms the reaper as the lock is released; one due now wakes a
        // receiver.
        drop(st);
        if let Ok(Nacked::Retrying { visible_at, .. }) = r {
            if visible_at <= now {
                shared.available.notify(1);
            }
        }
        r
    }

    /// Declares the item poison: straight to the dead letters with the error, whatever
    /// attempts it had left.
    pub fn dead_letter(mut self, error: impl Into<String>) -> Result<u32, ReceiptError> {
        let now = self.shared.rt.now();
        let error = Some(error.into());
        self.settle(|core, r| core.dead_letter(r, now, error))
    }

    /// Moves the deadline to `now + visibility` (capped by the max lease lifetime and the
    /// item's expiry). Zero releases the item, like a nack without error or backoff.
    pub fn extend(&mut self, visibility: Duration) -> Result<Extended, ReceiptError> {
        let now = self.shared.rt.now();
        let shared = self.shared.clone();
        let mut st = shared.lock();
        let r = st.core.extend(self.receipt, now, visibility);
        match r {
            Ok(Extended::Until { deadline, .. }) => {
                self.deadline = deadline;
                // A lease shortened by hand: its heartbeat must beat before the new deadline.
                // (Releasing the lock wakes the driver for it.)
                if let Some((key, _)) = &self.beat {
                    let beat_at = now.saturating_add(shared.heartbeat_every).min(deadline);
                    st.beats.bring_forward(*key, beat_at);
                }
            }
            Ok(_) => {
                self.unregister(&mut st);
                self.settled = true;
                drop(st);
                shared.available.notify(1);
            }
            Err(_) => {}
        }
        r
    }

    /// Stops the heartbeat of this delivery without settling it: the lease then runs out at
    /// its current deadline unless extended by hand. For a holder that gives up on an item
    /// but cannot hand it back yet. Does nothing without a heartbeat.
    pub fn stop_heartbeat(&mut self) {
        if self.beat.is_some() {
            let shared = self.shared.clone();
            let mut st = shared.lock();
            self.unregister(&mut st);
        }
    }

    fn settle<U>(
        &mut self,
        op: impl FnOnce(&mut Queue<T>, Receipt) -> Result<U, ReceiptError>,
    ) -> Result<U, ReceiptError> {
        self.settled = true;
        let beat = self.beat.take();
        let mut st = self.shared.lock();
        settle_in(&self.shared, &mut st, beat, self.receipt, op)
    }

    /// Settles under a lock the caller holds (batch acks). The lock must be this delivery's
    /// own queue's (see [`shared`](Self::shared)): its heartbeat key means nothing elsewhere.
    pub(crate) fn settle_locked<U>(
        &mut self,
        st: &mut State<T>,
        op: impl FnOnce(&mut Queue<T>, Receipt) -> Result<U, ReceiptError>,
    ) -> Result<U, ReceiptError> {
        self.settled = true;
        let beat = self.beat.take();
        settle_in(&self.shared, st, beat, self.receipt, op)
    }

    fn unregister(&mut self, st: &mut State<T>) {
        if let Some((key, _)) = self.beat.take() {
            st.beats.unregister(key);
        }
    }
}

impl<T, R: Runtime> Drop for Delivery<T, R> {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        // Stale or not, there is nothing more to do with the result here.
        let _ = self.hand_back(Failure::dropped());
    }
}

impl<T: std::fmt::Debug, R: Runtime> std::fmt::Debug for Delivery<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("item", &self.item.as_ref())
            .field("id", &self.id)
            .field("attempt", &self.attempt)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// Settles `receipt` with `op` under the lock: drops its heartbeat registration first, and
/// tells `wait_empty` waiters when the queue has emptied.
fn settle_in<T, R: Runtime, U>(
    shared: &Shared<T, R>,
    st: &mut State<T>,
    beat: Option<(BeatKey, Arc<LeaseSignal>)>,
    receipt: Receipt,
    op: impl FnOnce(&mut Queue<T>, Receipt) -> Result<U, ReceiptError>,
) -> Result<U, ReceiptError> {
    if let Some((key, _)) = beat {
        st.beats.unregister(key);
    }
    let r = op(&mut st.core, receipt);
    if st.core.is_empty() {
        shared.emptied.notify(usize::MAX);
    }
    r
}
