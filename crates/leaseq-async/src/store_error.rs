//! What a store says when it could not do what it was asked: [`StoreError`] (the change was
//! not made, or it may have been: the outcome is unknown) and [`SettleError`] (a settle
//! refused for its receipt, or failed in the store).
//!
//! "Ok" from a durable store means the change is on disk (or committed on the server). When
//! a store cannot say that, it says which of two things is true, typed, never a wrong
//! definite answer:
//!
//! - **not done**: the change was not made and will not be (nothing was sent, or the
//!   server refused it); retrying is safe;
//! - **outcome unknown**: the change may have been made or may yet be (the reply to a sent
//!   statement was lost; a commit is still being retried past the store's commit timeout).
//!   A retry may do it twice; an acked item may come back.
//!
//! The split follows FoundationDB's `is_maybe_committed` against
//! `is_retryable_not_committed`: "may have happened" is not "did not happen".

use std::fmt;
use std::sync::Arc;

use leaseq_core::ReceiptError;

/// A store could not do what it was asked. Cheap to clone (one failed commit answers every
/// operation that waited on it).
#[derive(Clone, PartialEq, Eq)]
pub struct StoreError {
    unknown: bool,
    message: Arc<str>,
}

impl StoreError {
    /// The change was not made (and will not be made by this call): safe to retry.
    pub fn not_done(message: impl Into<Arc<str>>) -> Self {
        StoreError {
            unknown: false,
            message: message.into(),
        }
    }

    /// The change may have been made, or may still be: a lost reply, a commit still being
    /// retried when the caller's wait ran out.
    pub fn outcome_unknown(message: impl Into<Arc<str>>) -> Self {
        StoreError {
            unknown: true,
            message: message.into(),
        }
    }

    /// Whether the change may have been made (`false`: it was not).
    pub fn is_outcome_unknown(&self) -> bool {
        self.unknown
    }

    /// What failed, in words (the store's or the database's own message).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Debug for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.unknown {
            "OutcomeUnknown"
        } else {
            "NotDone"
        };
        write!(f, "StoreError::{kind}({:?})", &*self.message)
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.unknown {
            write!(
                f,
                "store failed, outcome unknown (the change may or may not have been made): {}",
                self.message
            )
        } else {
            write!(f, "store failed, nothing changed: {}", self.message)
        }
    }
}

impl std::error::Error for StoreError {}

/// Why an ack, nack, dead-letter or extension did not go through.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SettleError {
    /// The receipt was refused: the lease expired and someone else holds the item, it was
    /// settled already, cancelled, ... (the queue is consistent; nothing to retry).
    Stale(ReceiptError),
    /// The store failed: the settle was not made, or its outcome is unknown
    /// ([`StoreError::is_outcome_unknown`]).
    Store(StoreError),
    /// The store does not offer this settle (what, in words): nothing was done and the
    /// lease is still held ([`Delivery::snooze`](crate::Delivery::snooze) on a store
    /// without snooze).
    Unsupported(&'static str),
}

impl SettleError {
    /// The receipt error, if the settle was refused for its receipt.
    pub fn stale(&self) -> Option<ReceiptError> {
        match self {
            SettleError::Stale(e) => Some(*e),
            SettleError::Store(_) | SettleError::Unsupported(_) => None,
        }
    }

    /// The store error, if the store failed.
    pub fn store(&self) -> Option<&StoreError> {
        match self {
            SettleError::Store(e) => Some(e),
            SettleError::Stale(_) | SettleError::Unsupported(_) => None,
        }
    }

    /// Whether the settle may have been made after all (a store failure with an unknown
    /// outcome).
    pub fn is_outcome_unknown(&self) -> bool {
        self.store().is_some_and(StoreError::is_outcome_unknown)
    }
}

impl From<ReceiptError> for SettleError {
    fn from(e: ReceiptError) -> Self {
        SettleError::Stale(e)
    }
}

impl From<StoreError> for SettleError {
    fn from(e: StoreError) -> Self {
        SettleError::Store(e)
    }
}

/// `settle_error == ReceiptError::LeaseExpired`, for code (and tests) that only look at
/// receipts.
impl PartialEq<ReceiptError> for SettleError {
    fn eq(&self, other: &ReceiptError) -> bool {
        self.stale() == Some(*other)
    }
}

impl fmt::Display for SettleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettleError::Stale(e) => write!(f, "{e}"),
            SettleError::Store(e) => write!(f, "{e}"),
            SettleError::Unsupported(what) => write!(f, "this store does not offer {what}"),
        }
    }
}

impl std::error::Error for SettleError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SettleError::Stale(e) => Some(e),
            SettleError::Store(e) => Some(e),
            SettleError::Unsupported(_) => None,
        }
    }
}
