//! What an operator call ([`LeaseQueue::redrive`](crate::LeaseQueue::redrive),
//! [`cancel`](crate::LeaseQueue::cancel), ...) says when it did not do what it was asked.

use std::fmt;

use crate::store_error::StoreError;

/// An operator call refused by the queue's rules (`E`: [`RedriveError`](crate::RedriveError),
/// [`CancelError`](crate::CancelError)), or failed in the store. The same type on every
/// store: the memory store never fails, a durable one says "not done" or "outcome
/// unknown" ([`StoreError`]) instead of a wrong definite answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdminError<E> {
    /// The queue's rules refused it (no such item, in flight, at capacity, ...): nothing
    /// changed.
    Refused(E),
    /// The store failed: not done, or its outcome is unknown
    /// ([`StoreError::is_outcome_unknown`]).
    Store(StoreError),
}

impl<E> AdminError<E> {
    /// The refusal, if the queue's rules refused the call.
    pub fn refused(&self) -> Option<&E> {
        match self {
            AdminError::Refused(e) => Some(e),
            AdminError::Store(_) => None,
        }
    }

    /// The store error, if the store failed.
    pub fn store(&self) -> Option<&StoreError> {
        match self {
            AdminError::Store(e) => Some(e),
            AdminError::Refused(_) => None,
        }
    }
}

impl<E> From<StoreError> for AdminError<E> {
    fn from(e: StoreError) -> Self {
        AdminError::Store(e)
    }
}

impl<E: fmt::Display> fmt::Display for AdminError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdminError::Refused(e) => write!(f, "{e}"),
            AdminError::Store(e) => write!(f, "{e}"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for AdminError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AdminError::Refused(e) => Some(e),
            AdminError::Store(e) => Some(e),
        }
    }
}
