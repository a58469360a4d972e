//! What the store seam hands up: a lease just taken (and when its heartbeat starts), a
//! checkpoint being recorded, a driver step's finding (see [`Store`](crate::Store)).

use std::future::Future;

use leaseq_core::{MessageId, Timestamp};

use crate::store_error::SettleError;

/// When a lease taken by [`Store::poll_take_one_into`](crate::Store::poll_take_one_into)
/// starts its heartbeat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TakeHeartbeat {
    /// Never: the lease runs out at its deadline unless extended by hand.
    Off,
    /// At the take.
    AtTake,
    /// When the holder asks, at [`Store::start_heartbeat`](crate::Store::start_heartbeat)
    /// (a pool's worker asks when its handler first waits, so that an item handled within
    /// one poll never registers a beat); the lease's lost signal is the heartbeat's from the
    /// take on. A store without the distinction starts it at the take.
    Later,
}

impl TakeHeartbeat {
    /// `AtTake` if `on`, else `Off`.
    pub(crate) fn at_take_if(on: bool) -> Self {
        if on {
            TakeHeartbeat::AtTake
        } else {
            TakeHeartbeat::Off
        }
    }
}

/// A lease just taken from a store: the item and what its delivery needs.
#[derive(Debug)]
pub struct Taken<T, K> {
    /// The delivery's own copy of the item.
    pub item: T,
    /// The message id (the same on every delivery of this item).
    pub id: MessageId,
    /// 1 on the first delivery, 2 on the second, ...
    pub attempt: u32,
    /// When the lease ends unless extended.
    pub deadline: Timestamp,
    /// The item's own deadline, if it was pushed with a time to live.
    pub expires_at: Option<Timestamp>,
    /// The store's handle on the lease.
    pub ticket: K,
}

/// A checkpoint being recorded ([`Store::checkpoint`](crate::Store::checkpoint)): borrows nothing from the store or
/// the ticket.
pub type Checkpointing = std::pin::Pin<Box<dyn Future<Output = Result<(), SettleError>> + Send>>;

/// What one step of the driver found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Drive {
    /// When the driver must run again by itself (`Timestamp::MAX`: only when woken).
    pub next: Timestamp,
    /// Nothing left to drive: no handle and no lease kept alive. The driver ends.
    pub done: bool,
}
