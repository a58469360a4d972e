//! Retry rules per job kind: one queue, many kinds of job, each with its own max attempts,
//! backoff and item timeout, and a handler's "retry after D" or "do not retry" honoured.
//!
//! The queue's [`Config`](crate::Config) holds the defaults and the store applies them on
//! every nack, through [`RetryPolicy`]. A [`KindPolicy`] decides *before* the nack, as a
//! pure function, and expresses its verdict as a [`Failure`] the store's own policy turns
//! into that very verdict: a retry as [`Retry::After`] (exact), a dead letter as
//! [`Retry::Never`]. So a kind's rules work on every store, with no store change.

use alloc::string::String;
use core::time::Duration;

use crate::backoff::Backoff;
use crate::error::ConfigError;
use crate::event::Reason;
use crate::outcome::{Failure, Retry};
use crate::policy::{RetryPolicy, Verdict};

/// A job kind's own retry rules; a rule not set falls back to the queue's
/// [`Config`](crate::Config).
///
/// - **Max attempts** can only lower the queue's: the store applies the queue's on every
///   nack, so open the queue with the largest any kind needs.
/// - **Backoff** replaces the queue's for this kind; the queue's [`Jitter`](crate::Jitter)
///   still shortens it (drawn from the [`RetryPolicy`] passed in).
/// - **Item timeout**: how long a handler of this kind may run before its attempt fails
///   with [`Reason::TimedOut`]. Enforced by the driver (the pool), not the core; kept here
///   so that a kind's rules live in one value.
///
/// A handler's own answer wins over the kind's backoff: [`Failure::retry_after`] retries
/// after exactly its delay, [`Failure::permanent`] dead-letters at once.
///
/// ```
/// use core::time::Duration;
/// use leaseq_core::{Backoff, Config, Failure, KindPolicy, Reason, Retry, RetryPolicy};
///
/// // No jitter, to show the delays exactly.
/// let queue = Config::new(Duration::from_secs(30)).with_max_attempts(25).without_jitter();
/// let mut policy = RetryPolicy::new(&queue);
/// let email = KindPolicy::new()
///     .with_max_attempts(3)
///     .with_backoff(Backoff::Fixed(Duration::from_secs(60)))
///     .with_timeout(Duration::from_secs(10));
///
/// // Attempt 1 failed: retried after the kind's backoff, exactly.
/// let f = email.resolve(&mut policy, 1, false, Failure::error("smtp 451"));
/// assert_eq!(f.retry, Retry::After(Duration::from_secs(60)));
/// // Attempt 3 failed: the kind's last; dead-lettered now, with the failure's reason.
/// let f = email.resolve(&mut policy, 3, false, Failure::error("smtp 451"));
/// assert_eq!((f.retry, f.reason), (Retry::Never, Reason::Nacked));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct KindPolicy {
    max_attempts: Option<u32>,
    backoff: Option<Backoff>,
    timeout: Option<Duration>,
}

impl KindPolicy {
    /// The queue's rules, unchanged: set only what this kind does differently.
    pub const fn new() -> Self {
        KindPolicy {
            max_attempts: None,
            backoff: None,
            timeout: None,
        }
    }

    /// Deliveries an item of this kind gets (at most the queue's).
    pub const fn with_max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = Some(max_attempts);
        self
    }

    /// The delay before an item of this kind is delivered again after a failure.
    pub const fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = Some(backoff);
        self
    }

    /// How long a handler of this kind may run.
    pub const fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The kind's max attempts, if set.
    pub const fn max_attempts(&self) -> Option<u32> {
        self.max_attempts
    }

    /// The kind's backoff, if set.
    pub const fn backoff(&self) -> Option<Backoff> {
        self.backoff
    }

    /// The kind's item timeout, if set.
    pub const fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// Checks every rule set: zero attempts, a zero timeout and a backoff a
    /// [`Config`](crate::Config) would refuse are refused alike.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max_attempts == Some(0) {
            return Err(ConfigError::ZeroAttempts);
        }
        if self.timeout == Some(Duration::ZERO) {
            return Err(ConfigError::ZeroItemTimeout);
        }
        match self.backoff {
            Some(b) => b.validate(),
            None => Ok(()),
        }
    }

    /// What an attempt of this kind that ended without an ack becomes, given the queue's
    /// `policy`. `attempts`, `expired`, `reason` and `retry` as in
    /// [`RetryPolicy::after_failure`]; in order:
    ///
    /// 1. expired: dead letter, [`Reason::Expired`];
    /// 2. [`Retry::Never`]: dead letter with `reason`;
    /// 3. the kind's or the queue's last attempt: dead letter with `reason`;
    /// 4. [`Retry::After`]: retried after exactly its delay;
    /// 5. [`Retry::Backoff`]: retried after the kind's backoff (else the queue's), shortened
    ///    by the queue's jitter.
    ///
    /// Only step 5 draws from the jitter's PRNG, and only when it retries.
    pub fn after_failure(
        &self,
        policy: &mut RetryPolicy,
        attempts: u32,
        expired: bool,
        reason: Reason,
        retry: Retry,
    ) -> Verdict {
        let last = self.max_attempts.is_some_and(|max| attempts >= max);
        let retry = if expired {
            retry
        } else if last {
            Retry::Never
        } else {
            match (retry, self.backoff) {
                (Retry::Backoff, Some(b)) if attempts < policy.max_attempts() => {
                    Retry::After(policy.jitter(b.delay(attempts)))
                }
                (retry, _) => retry,
            }
        };
        policy.after_failure(attempts, expired, reason, retry)
    }

    /// The [`Failure`] to nack with so that the store, applying the queue's policy, reaches
    /// [`after_failure`](Self::after_failure)'s verdict: `failure` with its retry set to
    /// [`Retry::After`] the verdict's delay, or to [`Retry::Never`] with the verdict's
    /// reason. Its error is kept.
    pub fn resolve(
        &self,
        policy: &mut RetryPolicy,
        attempts: u32,
        expired: bool,
        failure: Failure,
    ) -> Failure {
        match self.after_failure(policy, attempts, expired, failure.reason, failure.retry) {
            Verdict::Retry { delay } => Failure {
                retry: Retry::After(delay),
                ..failure
            },
            Verdict::DeadLetter { reason } => Failure {
                reason,
                retry: Retry::Never,
                ..failure
            },
        }
    }
}

impl Failure {
    /// The handler says "do not retry": dead-lettered now with [`Reason::Rejected`] and
    /// `error`, whatever attempts are left (as [`Queue::dead_letter`](crate::Queue::dead_letter)
    /// does, but through a nack).
    pub fn permanent(error: impl Into<String>) -> Self {
        Failure {
            reason: Reason::Rejected,
            error: Some(error.into()),
            retry: Retry::Never,
        }
    }
}
