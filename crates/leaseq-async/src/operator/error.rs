//! [`OperatorError`]: why an operator call failed.

use std::fmt;

use crate::error_chain::ErrorChain;

/// Why an [`Operator`](super::Operator) call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OperatorError {
    /// The store has no queue of this name.
    NoSuchQueue(String),
    /// The store could not be read or written: the error's chain in words (never a
    /// connection string or secret: the stores' errors name neither).
    Store(String),
    /// This operator only reads (see [`Capabilities`](super::Capabilities)).
    ReadOnly,
    /// The store refused the action (a dead letter that is not there, or cannot go back):
    /// why, in words.
    Refused(String),
    /// Another process holds the store and must make the change itself (a SQLite file a
    /// running service owns): stop it, or act from it. Reads still work.
    InUse,
}

impl fmt::Display for OperatorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OperatorError::NoSuchQueue(q) => write!(f, "no queue named {q:?}"),
            OperatorError::Store(e) => write!(f, "the store failed: {e}"),
            OperatorError::ReadOnly => f.write_str("this operator only reads this store"),
            OperatorError::Refused(e) => write!(f, "refused: {e}"),
            OperatorError::InUse => f.write_str(
                "the store is in use by another process: act from that process, or stop it first",
            ),
        }
    }
}

impl std::error::Error for OperatorError {}

impl OperatorError {
    /// A store error with its whole chain of causes, one after the other
    /// ([`ErrorChain`]).
    ///
    /// ```
    /// use leaseq_async::operator::OperatorError;
    ///
    /// let e = std::io::Error::other("disk full");
    /// assert_eq!(OperatorError::store(&e), OperatorError::Store("disk full".into()));
    /// ```
    pub fn store(e: &dyn std::error::Error) -> OperatorError {
        OperatorError::Store(ErrorChain(e).to_string())
    }
}
