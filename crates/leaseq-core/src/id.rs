//! Message ids and lease receipts.

use core::fmt;
use core::num::NonZeroU32;

/// Identifies one pushed item for its whole life in the queue: the same across
/// redeliveries and redrives. Ids are assigned in push order, starting at 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct MessageId(pub(crate) u64);

impl MessageId {
    /// The id numbered `n`: for a driver that hands out ids itself (see
    /// [`Queue::push_with_id`](crate::Queue::push_with_id)).
    pub const fn new(n: u64) -> Self {
        MessageId(n)
    }

    /// The id as a number (its position in push order).
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Proof of one lease: what [`ack`](crate::Queue::ack), [`nack`](crate::Queue::nack),
/// [`extend`](crate::Queue::extend) and [`dead_letter`](crate::Queue::dead_letter) take.
///
/// Receipts are generational. Each delivery of an item gets a new receipt, and a receipt
/// stops working for good once its lease has been superseded (the item was leased again),
/// released, acked or dead-lettered. Checking one costs O(1): it names the queue, the slot
/// and the message it was issued for, and which lease of that message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Receipt {
    pub(crate) id: MessageId,
    pub(crate) slot: u32,
    pub(crate) lease: u32,
    /// The queue's tag, never zero (see `next_tag`).
    pub(crate) queue: NonZeroU32,
}

impl Receipt {
    /// The message this receipt was issued for.
    pub const fn id(&self) -> MessageId {
        self.id
    }
    /// Which lease of the message (1 for the first delivery, counting across redrives).
    pub const fn lease_number(&self) -> u32 {
        self.lease
    }
}

impl fmt::Display for Receipt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/lease {}", self.id, self.lease)
    }
}
