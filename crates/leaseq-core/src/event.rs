//! What happened inside the queue, for the driver to observe.

use core::fmt;
use core::time::Duration;

use crate::id::MessageId;
use crate::time::Timestamp;

/// Why an attempt ended without an ack, or why an item left for the dead letters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Reason {
    /// The lease ran out before an ack.
    LeaseExpired,
    /// The holder handed the item back with an error.
    Nacked,
    /// The holder gave up after its item timeout.
    TimedOut,
    /// The holder was dropped (panic, cancellation, early return) without settling.
    Dropped,
    /// The holder released the lease without an error (an extend to visibility zero).
    Released,
    /// The holder rejected the item: it asked for the dead letters at once, without further
    /// attempts ([`Queue::dead_letter`](crate::Queue::dead_letter), which a pool calls for a
    /// permanent job error). Code 5, as before its rename from `Terminated` (which serde still
    /// reads).
    #[cfg_attr(feature = "serde", serde(alias = "Terminated"))]
    Rejected,
    /// The holder's handler panicked (the panic's message is the last error).
    Panicked,
    /// The item's own deadline passed; it is never delivered again.
    Expired,
    /// The store could not decode the item's stored bytes (its codec failed); the error
    /// says why.
    Undecodable,
}

impl Reason {
    /// Every reason, in declaration order. A new reason is appended at the end, so that
    /// the position of each reason (which stores may keep as its code) never changes.
    pub const ALL: [Reason; 9] = [
        Reason::LeaseExpired,
        Reason::Nacked,
        Reason::TimedOut,
        Reason::Dropped,
        Reason::Released,
        Reason::Rejected,
        Reason::Panicked,
        Reason::Expired,
        Reason::Undecodable,
    ];

    /// Its code: its position in [`Reason::ALL`], stable across versions (what durable
    /// stores keep on disk).
    pub const fn code(self) -> u8 {
        self.index() as u8
    }

    /// The reason of a [`code`](Self::code), if it is one.
    pub const fn from_code(code: u8) -> Option<Reason> {
        if (code as usize) < Reason::ALL.len() {
            Some(Reason::ALL[code as usize])
        } else {
            None
        }
    }

    /// Its position in [`Reason::ALL`] (a new reason must be added there too).
    pub(crate) const fn index(self) -> usize {
        match self {
            Reason::LeaseExpired => 0,
            Reason::Nacked => 1,
            Reason::TimedOut => 2,
            Reason::Dropped => 3,
            Reason::Released => 4,
            Reason::Rejected => 5,
            Reason::Panicked => 6,
            Reason::Expired => 7,
            Reason::Undecodable => 8,
        }
    }

    /// A short lower-case name ("lease expired", "timed out", ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::LeaseExpired => "lease expired",
            Reason::Nacked => "nacked",
            Reason::TimedOut => "timed out",
            Reason::Dropped => "dropped",
            Reason::Released => "released",
            Reason::Rejected => "rejected",
            Reason::Panicked => "panicked",
            Reason::Expired => "expired",
            Reason::Undecodable => "undecodable",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a late or stale ack was judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum LateAckKind {
    /// Accepted: the lease had run out, but nobody had leased the item again, so the ack
    /// still saved a duplicate run.
    Unclaimed,
    /// Rejected: the item had been delivered to another holder since.
    Redelivered,
    /// Rejected: the item had been dead-lettered.
    DeadLettered,
    /// Rejected: the item had been acked already.
    AlreadyAcked,
    /// Rejected: the holder had already handed the item back (nack, release, drop).
    Released,
    /// Rejected: the item had been cancelled (or replaced by a push).
    Cancelled,
}

/// Something the queue did on its own or observed, returned by
/// [`Queue::poll_event`](crate::Queue::poll_event) in the order it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Event {
    /// An item was delivered for the first time (off by default: see [`EventMask`]).
    Delivered {
        /// The item.
        id: MessageId,
    },
    /// An item was delivered again.
    Redelivered {
        /// The item.
        id: MessageId,
        /// Which delivery this is (2 or more).
        attempt: u32,
    },
    /// A lease ran out before an ack.
    LeaseExpired {
        /// The item.
        id: MessageId,
        /// The attempt that ran out.
        attempt: u32,
        /// The deadline that passed.
        deadline: Timestamp,
    },
    /// An item went to the dead letters.
    DeadLettered {
        /// The item.
        id: MessageId,
        /// Deliveries it had.
        attempts: u32,
        /// Why it went.
        reason: Reason,
    },
    /// An ack came after its lease had ended.
    LateAck {
        /// The item.
        id: MessageId,
        /// How the ack was judged.
        kind: LateAckKind,
        /// How long after the lease deadline, where the queue still knows that deadline.
        late_by: Option<Duration>,
    },
    /// An extension was cut short by the max lease lifetime or the item's expiry.
    ExtensionCapped {
        /// The item.
        id: MessageId,
        /// The deadline granted.
        deadline: Timestamp,
    },
    /// An item was removed by [`Queue::cancel`](crate::Queue::cancel) or
    /// [`Queue::cancel_leased`](crate::Queue::cancel_leased).
    Cancelled {
        /// The item.
        id: MessageId,
        /// Whether it was leased: its holder's receipt is now stale
        /// ([`ReceiptError::Cancelled`](crate::ReceiptError::Cancelled)).
        in_flight: bool,
    },
    /// A ready or delayed item was replaced by a push with the same unique key and
    /// [`replace_pending`](crate::PushOptions::replace_pending).
    Replaced {
        /// The item removed.
        id: MessageId,
        /// The item pushed in its stead.
        by: MessageId,
    },
}

impl Event {
    pub(crate) const fn kind_bit(&self) -> u16 {
        match self {
            Event::Delivered { .. } => EventMask::DELIVERED.0,
            Event::Redelivered { .. } => EventMask::REDELIVERED.0,
            Event::LeaseExpired { .. } => EventMask::LEASE_EXPIRED.0,
            Event::DeadLettered { .. } => EventMask::DEAD_LETTERED.0,
            Event::LateAck { .. } => EventMask::LATE_ACK.0,
            Event::ExtensionCapped { .. } => EventMask::EXTENSION_CAPPED.0,
            Event::Cancelled { .. } => EventMask::CANCELLED.0,
            Event::Replaced { .. } => EventMask::REPLACED.0,
        }
    }
}

/// Which kinds of [`Event`] a queue records. Combine with `|`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct EventMask(u16);

impl EventMask {
    /// Nothing.
    pub const NONE: EventMask = EventMask(0);
    /// [`Event::Delivered`].
    pub const DELIVERED: EventMask = EventMask(1);
    /// [`Event::Redelivered`].
    pub const REDELIVERED: EventMask = EventMask(1 << 1);
    /// [`Event::LeaseExpired`].
    pub const LEASE_EXPIRED: EventMask = EventMask(1 << 2);
    /// [`Event::DeadLettered`].
    pub const DEAD_LETTERED: EventMask = EventMask(1 << 3);
    /// [`Event::LateAck`].
    pub const LATE_ACK: EventMask = EventMask(1 << 4);
    /// [`Event::ExtensionCapped`].
    pub const EXTENSION_CAPPED: EventMask = EventMask(1 << 5);
    /// [`Event::Cancelled`].
    pub const CANCELLED: EventMask = EventMask(1 << 6);
    /// [`Event::Replaced`].
    pub const REPLACED: EventMask = EventMask(1 << 7);
    /// Every kind.
    pub const ALL: EventMask = EventMask(0xff);
    /// Every kind but `Delivered` (one per receive: the hot path stays quiet).
    pub const DEFAULT: EventMask = EventMask(0xfe);

    /// Whether every kind in `other` is in `self`.
    pub const fn contains(self, other: EventMask) -> bool {
        self.0 & other.0 == other.0
    }

    pub(crate) const fn bits(self) -> u16 {
        self.0
    }
}

impl core::ops::BitOr for EventMask {
    type Output = EventMask;
    fn bitor(self, rhs: EventMask) -> EventMask {
        EventMask(self.0 | rhs.0)
    }
}

#[cfg(test)]
mod tests {
    use super::Reason;

    #[test]
    fn every_reason_is_listed_at_its_index() {
        for (i, reason) in Reason::ALL.iter().enumerate() {
            assert_eq!(reason.index(), i, "{reason}");
        }
    }
}
