//! A read-only look at the items a queue holds, for admin tools and checks.

use crate::id::MessageId;
use crate::key::UniqueKey;
use crate::time::Timestamp;

/// One live item (ready, delayed or in flight), as [`Queue::items`](crate::Queue::items)
/// shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct ItemView {
    /// Its message id.
    pub id: MessageId,
    /// Where it is.
    pub state: ItemState,
    /// Deliveries so far (the one in flight included).
    pub attempts: u32,
    /// Its own deadline, if it was pushed with a time to live.
    pub expires_at: Option<Timestamp>,
    /// Its priority level.
    pub priority: u8,
    /// Its unique key, if it was pushed with one.
    pub key: Option<UniqueKey>,
}

/// Where a live item is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ItemState {
    /// Visible: the next receive may take it.
    Ready,
    /// Waiting out a delay or a backoff.
    Delayed,
    /// Leased.
    InFlight {
        /// When the lease runs out unless extended.
        deadline: Timestamp,
    },
}

impl ItemView {
    /// A live item as a store other than the core keeps it (a database row, say): for
    /// showing it with the same type as the core's. No attempts, no time to live, level 0,
    /// no key; set the public fields for the rest.
    pub fn new(id: MessageId, state: ItemState) -> Self {
        ItemView {
            id,
            state,
            attempts: 0,
            expires_at: None,
            priority: 0,
            key: None,
        }
    }
}
