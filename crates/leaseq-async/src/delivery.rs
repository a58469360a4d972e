//! [`Delivery`]'s API: one leased item, settled by consuming it; written once for every
//! store. The struct, its `Drop` and what the seam's batch hooks use of it are the store
//! seam's (`store/delivery.rs`).

use std::sync::Arc;
use std::time::Duration;

use leaseq_core::{Acked, Extended, Failure, Nacked, Receipt, ReceiptError, Snoozed, Timestamp};

use crate::settling::{self, Settling};
use crate::store_error::SettleError;

use crate::lease_lost::LeaseLost;
use crate::memory::MemoryStore;
use crate::runtime::Runtime;
use crate::store::Store;

/// The struct is the seam's; the rest of this crate names it from here, with its API.
pub(crate) use crate::store::Delivery;

mod checkpoint;

impl<T, R: Runtime, S: Store<T, Runtime = R>> Delivery<T, R, S> {
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

    /// 1 on the first delivery, 2 on the second, ...
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// When the lease ends unless extended (by [`extend`](Self::extend); heartbeat
    /// extensions are not reflected here).
    pub fn deadline(&self) -> Timestamp {
        self.deadline
    }

    /// The item's own deadline, if it was pushed with a time to live.
    pub fn expires_at(&self) -> Option<Timestamp> {
        self.expires.then_some(self.expires_at)
    }

    /// Whether the heartbeat keeps this lease alive.
    pub fn has_heartbeat(&self) -> bool {
        self.ticket
            .as_ref()
            .is_some_and(|t| self.store.has_heartbeat(t))
    }

    /// Whether the lease is known to be lost: the heartbeat was refused or hit the max lease
    /// lifetime, or (without a heartbeat) the deadline has passed.
    pub fn is_lease_lost(&self) -> bool {
        match &self.ticket {
            Some(t) => self.store.is_lease_lost(t, self.deadline),
            None => true,
        }
    }

    /// Completes when the lease is lost, so that a handler can stop work that will be redone
    /// elsewhere. With a heartbeat that is when an extension is refused or the max lease
    /// lifetime is reached; without one, at the deadline.
    pub fn lease_lost(&self) -> LeaseLost {
        match &self.ticket {
            Some(t) => self.store.lease_lost(t, self.deadline),
            None => LeaseLost::lost(),
        }
    }

    /// Done: removes the item from the queue for good.
    ///
    /// Judged on a clock reading taken at this call: an ack after the deadline is late by
    /// exactly the time since it, and is accepted as [`Acked::LateUnclaimed`] if nobody else
    /// has leased the item since, whether or not the queue's driver has run in between.
    /// (The in-memory store answers at once; a durable one once the ack is committed, or
    /// with [`SettleError::Store`] when it could not be.)
    pub async fn ack(mut self) -> Result<Acked, SettleError> {
        let ticket = self.take_ticket()?;
        self.store.ack(ticket).await
    }

    /// Hands the item back with an error: it is delivered again after the backoff, or
    /// dead-lettered if this was its last attempt.
    pub async fn nack(self, error: impl Into<String>) -> Result<Nacked, SettleError> {
        self.nack_with(Failure::error(error)).await
    }

    /// Hands the item back with any [`Failure`] (reason, error, retry delay).
    pub async fn nack_with(mut self, failure: Failure) -> Result<Nacked, SettleError> {
        let ticket = self.take_ticket()?;
        self.store.nack(ticket, failure).await
    }

    /// Declares the item poison: straight to the dead letters with the error and reason
    /// [`Reason::Rejected`](leaseq_core::Reason::Rejected), whatever attempts it had left.
    pub async fn dead_letter(mut self, error: impl Into<String>) -> Result<u32, SettleError> {
        let ticket = self.take_ticket()?;
        self.store.dead_letter(ticket, error.into()).await
    }

    /// Puts the item back for `delay` without counting this attempt: the next delivery has
    /// the same attempt number (River's `JobSnooze`). For a handler that finds the item not
    /// ready for it yet and is not failing. Bounded per item by the queue's
    /// [`Config::with_max_snoozes`](leaseq_core::Config::with_max_snoozes): past it each
    /// snooze counts as a failed attempt ([`Snoozed::Counted`]), so an item cannot snooze
    /// forever unnoticed.
    ///
    /// On a store without snooze ([`Store::snoozes`]; the memory, SQLite and Postgres stores
    /// all snooze) it is refused with [`SettleError::Unsupported`] and the lease is kept: settle it
    /// another way. Otherwise the delivery is settled (a later settle is refused as
    /// released).
    pub async fn snooze(&mut self, delay: Duration) -> Result<Snoozed, SettleError> {
        if !self.store.snoozes() {
            return Err(SettleError::Unsupported("snooze"));
        }
        let ticket = self.take_ticket()?;
        self.store.snooze(ticket, delay).await
    }

    /// Starts the lease's heartbeat if it was taken to start later (see
    /// [`Store::start_heartbeat`]); `leased_at` is when the lease was taken.
    pub(crate) fn start_heartbeat(&mut self, leased_at: Timestamp) {
        if let Some(ticket) = &mut self.ticket {
            self.store.start_heartbeat(ticket, leased_at, self.deadline);
        }
    }

    /// Acks without waiting for the store's answer: the ack is made now (the lease given
    /// up, the item gone from the queue's view once the store applies it) and a durable
    /// store commits it with others in the background, so a consumer that takes one item
    /// at a time goes on to the next at once, as a broker client does. The returned
    /// [`Settling`] gives the answer [`ack`](Self::ack) would have given, to whoever awaits
    /// it; it may be dropped. The queue's stats count the outcome either way.
    ///
    /// Until the commit, a crash can bring the item back (it is then delivered again, as an
    /// item whose ack was lost): use [`ack`](Self::ack) where the work's own effect must
    /// not be repeated before its ack is durable, e.g. before replying to a client.
    pub fn ack_nowait(self) -> Settling<Acked> {
        self.settle_nowait(|store, ticket| async move { store.ack(ticket).await })
    }

    /// [`nack_with`](Self::nack_with) without waiting for the store's answer (see
    /// [`ack_nowait`](Self::ack_nowait)).
    pub fn nack_nowait(self, failure: Failure) -> Settling<Nacked> {
        self.settle_nowait(|store, ticket| async move { store.nack(ticket, failure).await })
    }

    /// [`dead_letter`](Self::dead_letter) without waiting for the store's answer (see
    /// [`ack_nowait`](Self::ack_nowait)).
    pub fn dead_letter_nowait(self, error: impl Into<String>) -> Settling<u32> {
        let error = error.into();
        self.settle_nowait(|store, ticket| async move { store.dead_letter(ticket, error).await })
    }

    /// Makes the settle `settle` builds from the store and the ticket, answered in the
    /// background (see [`settling::start`]); a delivery settled already answers at once.
    fn settle_nowait<O, F>(mut self, settle: impl FnOnce(Arc<S>, S::Ticket) -> F) -> Settling<O>
    where
        O: Send + 'static,
        F: std::future::Future<Output = Result<O, SettleError>> + Send + 'static,
    {
        match self.take_ticket() {
            Err(e) => Settling::done(Err(e.into())),
            Ok(ticket) => settling::start(self.store.runtime(), settle(self.store.clone(), ticket)),
        }
    }

    /// Gives the lease back unstarted: the item is visible again at once and this attempt
    /// does not count (see [`Store::put_back`]). For a lease taken ahead of need (a
    /// prefetch) that its taker will not work on.
    ///
    /// Also for a holder that gives up on an item because it is stopping (a deploy): the
    /// work it did is not held against the item (a checkpoint it recorded is kept, see
    /// [`crate::progress`]), and the next process takes it at once. See
    /// [`Consumer`](crate::Consumer) for the pattern.
    pub fn put_back(mut self) {
        self.put_back_in_place();
    }

    /// [`put_back`](Self::put_back) of a delivery that stays where it is (left settled):
    /// whether it still held its lease.
    pub(crate) fn put_back_in_place(&mut self) -> bool {
        match self.ticket.take() {
            Some(ticket) => {
                self.store.put_back(ticket);
                true
            }
            None => false,
        }
    }

    /// Whether the lease is still held (no settle has taken it).
    #[inline]
    pub(crate) fn is_unsettled(&self) -> bool {
        self.ticket.is_some()
    }

    /// Moves the deadline to `now + visibility` (capped by the max lease lifetime and the
    /// item's expiry). Zero releases the item, like a nack without error or backoff. A
    /// heartbeat on the lease is brought forward to keep a nearer deadline.
    pub async fn extend(&mut self, visibility: Duration) -> Result<Extended, SettleError> {
        let Some(ticket) = self.ticket.as_mut() else {
            return Err(ReceiptError::Released(self.id).into());
        };
        let r = self.store.extend(ticket, visibility).await;
        match r {
            Ok(Extended::Until { deadline, .. }) => self.deadline = deadline,
            Ok(_) => self.ticket = None,
            Err(_) => {}
        }
        r
    }

    /// Stops the heartbeat of this delivery without settling it: the lease then runs out at
    /// its current deadline unless extended by hand. For a holder that gives up on an item
    /// but cannot hand it back yet. Does nothing without a heartbeat.
    pub fn stop_heartbeat(&mut self) {
        if let Some(ticket) = self.ticket.as_mut() {
            self.store.stop_heartbeat(ticket);
        }
    }

    /// Hands the lease's ticket to the caller, who settles it through the store's own API
    /// (an ack inside a database transaction, say); the delivery's `Drop` then hands nothing
    /// back. `None` if the delivery was settled already (an [`extend`](Self::extend) to
    /// zero released it). [`Store`]'s own methods on [`store`](Self::store) settle it too. A
    /// ticket dropped unsettled is not handed back: the lease runs on (its heartbeat too,
    /// if it has one) until it runs out.
    pub fn into_ticket(mut self) -> Option<S::Ticket> {
        self.ticket.take()
    }
}

impl<T: Clone + Send + 'static, R: Runtime> Delivery<T, R, MemoryStore<T, R>> {
    /// The receipt of this lease (in-memory store).
    pub fn receipt(&self) -> Option<Receipt> {
        self.ticket.as_ref().map(|t| t.receipt)
    }
}

impl<T: std::fmt::Debug, R: Runtime, S: Store<T, Runtime = R>> std::fmt::Debug
    for Delivery<T, R, S>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("item", &self.item.as_ref())
            .field("id", &self.id)
            .field("attempt", &self.attempt)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}
