//! Items that will not be delivered again.

use alloc::string::String;

use crate::event::Reason;
use crate::id::MessageId;
use crate::key::UniqueKey;
use crate::time::Timestamp;

/// An item that left the queue without an ack: attempts used up, declared poison, or expired.
///
/// Expired items are kept here too, with [`Reason::Expired`]: one place to look for
/// everything that was not processed.
///
/// With the `serde` feature it serializes (and deserializes, when `T` does) with every
/// field, including the count of leases issued (`leases`, which keeps the receipts of a
/// redriven item unique), so a round trip gives an equal value.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DeadLetter<T> {
    /// The item, untouched.
    pub item: T,
    /// Its message id.
    pub id: MessageId,
    /// Deliveries it had.
    pub attempts: u32,
    /// Why it was dead-lettered.
    pub reason: Reason,
    /// The error recorded by the last nack or dead-letter call, if any.
    pub last_error: Option<String>,
    /// When it was dead-lettered.
    pub at: Timestamp,
    /// The item's own deadline, if it was pushed with one.
    pub expires_at: Option<Timestamp>,
    /// Its priority level, kept for a redrive.
    pub priority: u8,
    /// Its unique key, if it was pushed with one. The key is free while the item is a dead
    /// letter; a redrive takes it again, or is refused if a live item holds it
    /// ([`RedriveError::KeyTaken`](crate::RedriveError::KeyTaken)).
    pub key: Option<UniqueKey>,
    /// Leases issued so far; keeps receipts of a redriven item unique.
    pub(crate) leases: u32,
}

impl<T> DeadLetter<T> {
    /// A dead letter as a store other than the core keeps it (a database row, say): for
    /// showing it with the same type as the core's. No unique key, no time to live, level
    /// 0, no error; set the public fields for the rest.
    pub fn new(item: T, id: MessageId, attempts: u32, reason: Reason, at: Timestamp) -> Self {
        DeadLetter {
            item,
            id,
            attempts,
            reason,
            last_error: None,
            at,
            expires_at: None,
            priority: 0,
            key: None,
            leases: 0,
        }
    }

    /// The same dead letter with its item changed by `f` (decoded, say, or borrowed).
    pub fn map_item<U>(self, f: impl FnOnce(T) -> U) -> DeadLetter<U> {
        DeadLetter {
            item: f(self.item),
            id: self.id,
            attempts: self.attempts,
            reason: self.reason,
            last_error: self.last_error,
            at: self.at,
            expires_at: self.expires_at,
            priority: self.priority,
            key: self.key,
            leases: self.leases,
        }
    }
}
