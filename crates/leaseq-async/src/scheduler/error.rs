//! Why a scheduler step did nothing: [`SchedulerError`].

use std::fmt;

use crate::error::PushError;
use crate::store_error::StoreError;

/// Why a [`Scheduler`](super::Scheduler) step did nothing (the schedule's stored cursor is
/// where it was, unless a store failure's outcome is unknown: the next step reads it).
#[non_exhaustive]
pub enum SchedulerError<T> {
    /// A tick's job was refused by the queue (closed, full, the job would not encode or is
    /// too large, ...), the job inside: nothing of the step was pushed.
    Push(PushError<T>),
    /// The store failed to read the schedule or to commit the step: not done, or outcome
    /// unknown ([`StoreError::is_outcome_unknown`]).
    Store(StoreError),
}

impl<T> fmt::Debug for SchedulerError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedulerError::Push(e) => f.debug_tuple("Push").field(e).finish(),
            SchedulerError::Store(e) => f.debug_tuple("Store").field(e).finish(),
        }
    }
}

impl<T> fmt::Display for SchedulerError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedulerError::Push(_) => f.write_str("a scheduled job was refused by the queue"),
            SchedulerError::Store(_) => {
                f.write_str("the store could not read or commit the schedule's step")
            }
        }
    }
}

impl<T: 'static> std::error::Error for SchedulerError<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SchedulerError::Push(e) => Some(e),
            SchedulerError::Store(e) => Some(e),
        }
    }
}
