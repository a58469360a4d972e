//! Arguments and results of push, ack, nack and extend.

use alloc::string::String;
use core::time::Duration;

use crate::event::Reason;
use crate::time::Timestamp;

/// Options for [`Queue::push_with`](crate::Queue::push_with).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PushOptions {
    /// Invisible until `now + delay`.
    pub delay: Duration,
    /// After this instant the item is never delivered again: it goes to the dead letters with
    /// [`Reason::Expired`], and no lease outlives it.
    pub expires_at: Option<Timestamp>,
}

impl PushOptions {
    /// Visible at once, never expires.
    pub const fn new() -> Self {
        PushOptions {
            delay: Duration::ZERO,
            expires_at: None,
        }
    }
    /// Invisible for `delay`.
    pub const fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
    /// Useless after `at`.
    pub const fn expires_at(mut self, at: Timestamp) -> Self {
        self.expires_at = Some(at);
        self
    }
}

/// When a failed item is visible again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Retry {
    /// After the queue's backoff policy (with jitter, if configured).
    Backoff,
    /// After exactly this delay.
    After(Duration),
}

/// How an attempt failed, for [`Queue::nack`](crate::Queue::nack).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Failure {
    /// Recorded as the dead-letter reason if this was the last attempt.
    pub reason: Reason,
    /// Recorded as the item's last error (kept if `None`).
    pub error: Option<String>,
    /// When to deliver again.
    pub retry: Retry,
}

impl Failure {
    /// A handler error: [`Reason::Nacked`], backoff policy.
    pub fn error(error: impl Into<String>) -> Self {
        Failure {
            reason: Reason::Nacked,
            error: Some(error.into()),
            retry: Retry::Backoff,
        }
    }
    /// The holder's item timeout fired: [`Reason::TimedOut`], backoff policy.
    pub fn timed_out() -> Self {
        Failure {
            reason: Reason::TimedOut,
            error: None,
            retry: Retry::Backoff,
        }
    }
    /// The holder's handler panicked with `message`: [`Reason::Panicked`], backoff policy.
    pub fn panicked(message: impl Into<String>) -> Self {
        Failure {
            reason: Reason::Panicked,
            error: Some(message.into()),
            retry: Retry::Backoff,
        }
    }
    /// The holder was dropped unsettled: [`Reason::Dropped`], backoff policy.
    pub fn dropped() -> Self {
        Failure {
            reason: Reason::Dropped,
            error: None,
            retry: Retry::Backoff,
        }
    }
    /// Any reason, no error, backoff policy.
    pub const fn with_reason(reason: Reason) -> Self {
        Failure {
            reason,
            error: None,
            retry: Retry::Backoff,
        }
    }
    /// Replaces the error.
    pub fn and_error(mut self, error: impl Into<String>) -> Self {
        self.error = Some(error.into());
        self
    }
    /// Deliver again after exactly `delay` instead of the backoff.
    pub fn retry_after(mut self, delay: Duration) -> Self {
        self.retry = Retry::After(delay);
        self
    }
}

/// An accepted ack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Acked {
    /// Before the deadline.
    OnTime,
    /// After the deadline, but nobody had leased the item again: a duplicate run saved.
    LateUnclaimed {
        /// How long after the deadline.
        late_by: Duration,
    },
}

/// What became of a handed-back item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Nacked {
    /// It will be delivered again.
    Retrying {
        /// From when.
        visible_at: Timestamp,
        /// Deliveries so far.
        attempts: u32,
    },
    /// That was its last attempt (or it has expired): it is in the dead letters.
    DeadLettered {
        /// Deliveries it had.
        attempts: u32,
    },
}

/// The result of [`Queue::extend`](crate::Queue::extend).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Extended {
    /// The lease now ends at `deadline`.
    Until {
        /// The new deadline.
        deadline: Timestamp,
        /// Whether the max lease lifetime or the item's expiry cut it short.
        capped: bool,
    },
    /// Visibility zero: the item was handed back.
    Released(Nacked),
}
