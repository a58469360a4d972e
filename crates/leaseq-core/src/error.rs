//! Typed errors for operations that can be refused.

use core::fmt;

use crate::id::MessageId;

/// A push that was refused. The item is inside: nothing is lost.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PushError<T> {
    /// The queue holds its configured capacity already.
    Full(T),
    /// The item's expiry is not after `now`: it could never be delivered.
    AlreadyExpired(T),
}

impl<T> PushError<T> {
    /// The refused item, handed back.
    pub fn into_item(self) -> T {
        match self {
            PushError::Full(t) | PushError::AlreadyExpired(t) => t,
        }
    }
}

impl<T> fmt::Debug for PushError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushError::Full(_) => f.write_str("Full(..)"),
            PushError::AlreadyExpired(_) => f.write_str("AlreadyExpired(..)"),
        }
    }
}

impl<T> fmt::Display for PushError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushError::Full(_) => f.write_str("queue is at capacity; item handed back"),
            PushError::AlreadyExpired(_) => {
                f.write_str("item expiry is not in the future; item handed back")
            }
        }
    }
}

impl<T> core::error::Error for PushError<T> {}

/// Why a receipt no longer settles anything. Returned by ack, nack, extend and dead-letter.
///
/// A stale receipt is stale forever: no later event makes it valid again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReceiptError {
    /// The item was delivered to another holder after this lease ended.
    Redelivered(MessageId),
    /// The item was dead-lettered (attempts used up, declared poison, or expired).
    DeadLettered(MessageId),
    /// The item was acked already.
    AlreadyAcked(MessageId),
    /// This holder already handed the item back (nack, release, drop); it waits for its
    /// next delivery.
    Released(MessageId),
    /// The lease ran out. Nobody has the item yet, so an ack or dead-letter with this receipt
    /// is still accepted, but the attempt has already been counted as expired: it can no
    /// longer be extended, nacked or released.
    LeaseExpired(MessageId),
    /// The receipt is from another queue, forged, or so old that its slot has since held
    /// other items and its fate is no longer known (it was acked or its dead letter taken).
    Unknown,
}

impl fmt::Display for ReceiptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReceiptError::Redelivered(id) => {
                write!(f, "stale receipt: {id} was delivered to another holder")
            }
            ReceiptError::DeadLettered(id) => write!(f, "stale receipt: {id} was dead-lettered"),
            ReceiptError::AlreadyAcked(id) => write!(f, "stale receipt: {id} was acked already"),
            ReceiptError::Released(id) => {
                write!(f, "stale receipt: {id} was handed back by its holder")
            }
            ReceiptError::LeaseExpired(id) => write!(f, "the lease on {id} has run out"),
            ReceiptError::Unknown => {
                f.write_str("unknown receipt: from another queue, or its item is long gone")
            }
        }
    }
}

impl core::error::Error for ReceiptError {}

/// A redrive that was refused; the dead letter stays where it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RedriveError {
    /// No dead letter has this id.
    NotFound(MessageId),
    /// The queue is at capacity.
    Full(MessageId),
    /// The item's own deadline has passed; it would only expire again.
    Expired(MessageId),
}

impl fmt::Display for RedriveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedriveError::NotFound(id) => write!(f, "no dead letter {id}"),
            RedriveError::Full(id) => write!(f, "queue is at capacity; {id} stays dead-lettered"),
            RedriveError::Expired(id) => write!(f, "{id} has expired; it stays dead-lettered"),
        }
    }
}

impl core::error::Error for RedriveError {}
