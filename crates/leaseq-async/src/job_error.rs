//! A pool handler's error: its message, and when (if ever) to try again.

use std::fmt;
use std::time::Duration;

use leaseq_core::Failure;

/// What a pool handler returns on failure: a message, and when (if ever) to try again.
///
/// Any error converts with `?` (as a retryable failure; see the `From` impl); say
/// [`JobError::permanent`] for bad input that will fail again: the item is then
/// dead-lettered at once instead of retried; say [`JobError::retry_after`] when the
/// handler knows when to try again (a rate limit's `Retry-After`, a resource busy until a
/// known time): the item is delivered again after exactly that delay, not the backoff.
///
/// ```
/// use std::time::Duration;
/// use leaseq_async::JobError;
///
/// let e = JobError::retry_after(Duration::from_secs(30), "429 Too Many Requests");
/// assert_eq!(e.retry_delay(), Some(Duration::from_secs(30)));
/// assert!(!e.is_permanent());
/// assert!(JobError::permanent("no such account").is_permanent());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobError {
    message: String,
    retry: JobRetry,
}

/// When a failed job is tried again, in 8 bytes (a `JobError` stays as small as a
/// `String` and a word: it is moved through every handling's result): the exact delay in
/// nanoseconds, or one of two markers above any delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct JobRetry(u64);

impl JobRetry {
    /// After the backoff (the job kind's, else the queue's).
    const BACKOFF: JobRetry = JobRetry(u64::MAX);
    /// Never: dead-lettered now.
    const NEVER: JobRetry = JobRetry(u64::MAX - 1);

    /// After exactly `delay` (at most `u64::MAX - 2` ns, about 584 years).
    fn after(delay: Duration) -> Self {
        JobRetry(u64::try_from(delay.as_nanos()).map_or(u64::MAX - 2, |n| n.min(u64::MAX - 2)))
    }

    /// The exact delay, if one was asked for.
    fn delay(self) -> Option<Duration> {
        (self.0 < u64::MAX - 1).then(|| Duration::from_nanos(self.0))
    }
}

impl JobError {
    /// A failure worth retrying, after the backoff: the job kind's
    /// ([`KindPolicy`](leaseq_core::KindPolicy), when the pool has one), else the queue's.
    pub fn retry(message: impl fmt::Display) -> Self {
        JobError {
            message: message.to_string(),
            retry: JobRetry::BACKOFF,
        }
    }

    /// A failure worth retrying after exactly `delay`, whatever the backoff (and with no
    /// jitter): the item is visible again `delay` after the failure is settled (a delay
    /// beyond 584 years is cut to that). The attempt still counts, so an item at its last
    /// attempt (the queue's, or its kind's) is dead-lettered instead; an item past its own
    /// expiry is dead-lettered as expired.
    pub fn retry_after(delay: Duration, message: impl fmt::Display) -> Self {
        JobError {
            message: message.to_string(),
            retry: JobRetry::after(delay),
        }
    }

    /// A failure that will repeat: dead-letter the item now, with reason
    /// [`Reason::Rejected`](leaseq_core::Reason::Rejected).
    pub fn permanent(message: impl fmt::Display) -> Self {
        JobError {
            message: message.to_string(),
            retry: JobRetry::NEVER,
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether retrying is pointless.
    pub fn is_permanent(&self) -> bool {
        self.retry == JobRetry::NEVER
    }

    /// The exact delay asked for with [`retry_after`](Self::retry_after), if any.
    pub fn retry_delay(&self) -> Option<Duration> {
        self.retry.delay()
    }

    /// The message, by value.
    pub(crate) fn into_message(self) -> String {
        self.message
    }

    /// As a boxed `Error`, for code that propagates errors that way.
    pub fn into_error(self) -> Box<dyn std::error::Error + Send + Sync> {
        self.message.into()
    }

    /// The core's [`Failure`] for this error: [`Reason::Nacked`](leaseq_core::Reason::Nacked)
    /// with the message, retried after the backoff or the exact delay asked for; a
    /// permanent one is [`Failure::permanent`].
    pub(crate) fn into_failure(self) -> Failure {
        if self.is_permanent() {
            return Failure::permanent(self.message);
        }
        match self.retry.delay() {
            Some(delay) => Failure::error(self.message).retry_after(delay),
            None => Failure::error(self.message),
        }
    }
}

/// `?` on anything that boxes into an error: every `Error` type, `Box<dyn Error + Send +
/// Sync>`, `anyhow::Error`, `String` and `&str`. A retryable failure whose message is the
/// error and its chain of causes ("outer: inner: root").
///
/// `JobError` is not itself an `Error`, like `anyhow::Error` and for the same reason (that
/// would clash with this conversion); [`into_error`](JobError::into_error) makes one.
impl<E: Into<Box<dyn std::error::Error + Send + Sync>>> From<E> for JobError {
    fn from(e: E) -> Self {
        let e: Box<dyn std::error::Error + Send + Sync> = e.into();
        let mut message = e.to_string();
        let mut cause = e.source();
        while let Some(c) = cause {
            message.push_str(": ");
            message.push_str(&c.to_string());
            cause = c.source();
        }
        JobError::retry(message)
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::JobError;

    /// A delay is kept to the nanosecond, zero included; one beyond `u64` nanoseconds is
    /// cut, never taken for "backoff" or "never".
    #[test]
    fn a_retry_delay_is_kept_exactly_and_never_becomes_a_marker() {
        for delay in [
            Duration::ZERO,
            Duration::new(1, 234_567_891),
            Duration::from_secs(86_400),
        ] {
            let e = JobError::retry_after(delay, "later");
            assert_eq!((e.retry_delay(), e.is_permanent()), (Some(delay), false));
        }
        let huge = JobError::retry_after(Duration::MAX, "much later");
        assert_eq!(huge.retry_delay(), Some(Duration::from_nanos(u64::MAX - 2)));
        assert!(!huge.is_permanent());
        assert_eq!(JobError::retry("x").retry_delay(), None);
        assert_eq!(JobError::permanent("x").retry_delay(), None);
        assert!(JobError::permanent("x").is_permanent());
        let word = std::mem::size_of::<u64>();
        assert_eq!(
            std::mem::size_of::<JobError>(),
            std::mem::size_of::<String>() + word
        );
    }
}
