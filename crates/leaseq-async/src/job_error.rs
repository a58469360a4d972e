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
/// known time): the item is delivered again after exactly that delay, not the backoff;
/// say [`JobError::stopped`] when the handler ends early because its pool is stopping
/// ([`Job::stopping`](crate::Job::stopping)): the item is put back at once, uncounted.
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
/// nanoseconds (below 2^63), a snooze's delay with the top bit set, or one of three markers
/// above any snooze.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct JobRetry(u64);

impl JobRetry {
    /// After the backoff (the job kind's, else the queue's).
    const BACKOFF: JobRetry = JobRetry(u64::MAX);
    /// Never: dead-lettered now.
    const NEVER: JobRetry = JobRetry(u64::MAX - 1);
    /// Put back uncounted if the pool is stopping; else after the backoff.
    const STOPPED: JobRetry = JobRetry(u64::MAX - 2);
    /// The longest exact delay, below every snooze.
    const MAX_DELAY: u64 = (1 << 63) - 1;
    /// A snooze: this bit and its delay.
    const SNOOZE: u64 = 1 << 63;
    /// The longest snooze, below every marker.
    const MAX_SNOOZE: u64 = (1 << 63) - 4;

    /// After exactly `delay` (at most `MAX_DELAY` ns, about 292 years).
    fn after(delay: Duration) -> Self {
        JobRetry(nanos(delay, Self::MAX_DELAY))
    }

    /// Snoozed for `delay` (at most `MAX_SNOOZE` ns).
    fn snooze(delay: Duration) -> Self {
        JobRetry(Self::SNOOZE | nanos(delay, Self::MAX_SNOOZE))
    }

    /// The exact delay, if one was asked for.
    fn delay(self) -> Option<Duration> {
        (self.0 <= Self::MAX_DELAY).then(|| Duration::from_nanos(self.0))
    }

    /// The snooze's delay, if this is a snooze.
    fn snoozed(self) -> Option<Duration> {
        (self.0 >= Self::SNOOZE && self.0 < Self::STOPPED.0)
            .then(|| Duration::from_nanos(self.0 - Self::SNOOZE))
    }
}

/// `delay` in nanoseconds, cut to `max`.
fn nanos(delay: Duration, max: u64) -> u64 {
    u64::try_from(delay.as_nanos()).map_or(max, |n| n.min(max))
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
    /// beyond 292 years is cut to that). The attempt still counts, so an item at its last
    /// attempt (the queue's, or its kind's) is dead-lettered instead; an item past its own
    /// expiry is dead-lettered as expired.
    pub fn retry_after(delay: Duration, message: impl fmt::Display) -> Self {
        JobError {
            message: message.to_string(),
            retry: JobRetry::after(delay),
        }
    }

    /// Not a failure: the item is not ready for this handler yet (a resource busy, a
    /// partner's rate limit): put it back for `delay` **without counting the attempt**, as
    /// [`Delivery::snooze`](crate::Delivery::snooze) does. Bounded per item by the queue's
    /// [`Config::with_max_snoozes`](leaseq_core::Config::with_max_snoozes) (past it each
    /// snooze counts as a failed attempt). Not counted in the pool's outcomes (the queue's
    /// [`Stats::snoozed`](leaseq_core::Stats::snoozed) counts it). On a store without
    /// snooze ([`Store::snoozes`](crate::Store::snoozes)) it is a counted retry after
    /// `delay`, as [`retry_after`](Self::retry_after).
    ///
    /// ```
    /// use std::time::Duration;
    /// use leaseq_async::JobError;
    ///
    /// let e = JobError::snooze(Duration::from_secs(5));
    /// assert_eq!(e.snooze_delay(), Some(Duration::from_secs(5)));
    /// assert_eq!(e.retry_delay(), None);
    /// ```
    pub fn snooze(delay: Duration) -> Self {
        JobError {
            message: "snoozed".to_string(),
            retry: JobRetry::snooze(delay),
        }
    }

    /// The delay of a [`snooze`](Self::snooze), if this is one.
    pub fn snooze_delay(&self) -> Option<Duration> {
        self.retry.snoozed()
    }

    /// A failure that will repeat: dead-letter the item now, with reason
    /// [`Reason::Rejected`](leaseq_core::Reason::Rejected).
    pub fn permanent(message: impl fmt::Display) -> Self {
        JobError {
            message: message.to_string(),
            retry: JobRetry::NEVER,
        }
    }

    /// The handler stopped early because its pool is stopping (a deploy: see
    /// [`Job::stopping`](crate::Job::stopping)) and hands the item back: if the pool is
    /// stopping when the handler returns this, the item is **put back uncounted** at once,
    /// as a handler cut off at the end of the grace would be: its attempt not counted, its
    /// checkpoint kept, visible at once to the next process, listed in
    /// [`PoolReport::put_back`](crate::PoolReport::put_back), and not counted in the
    /// pool's outcomes. So a long job that has checkpointed need not wait out the grace.
    ///
    /// Returned when the pool is not stopping, it is an ordinary retryable failure (as
    /// [`retry`](Self::retry) with this message): counted, retried after the backoff, so
    /// that a handler that returns it by mistake cannot loop on an item forever.
    pub fn stopped() -> Self {
        JobError {
            message: "stopped for the pool's shutdown".to_string(),
            retry: JobRetry::STOPPED,
        }
    }

    /// Whether this is [`stopped`](Self::stopped).
    pub fn is_stopped(&self) -> bool {
        self.retry == JobRetry::STOPPED
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
        match self.retry.delay().or(self.retry.snoozed()) {
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
        assert_eq!(
            huge.retry_delay(),
            Some(Duration::from_nanos((1 << 63) - 1))
        );
        let snooze = JobError::snooze(Duration::MAX);
        assert_eq!(
            snooze.snooze_delay(),
            Some(Duration::from_nanos((1 << 63) - 4))
        );
        assert_eq!((snooze.retry_delay(), snooze.is_permanent()), (None, false));
        assert!(!snooze.is_stopped());
        assert_eq!(
            JobError::snooze(Duration::ZERO).snooze_delay(),
            Some(Duration::ZERO)
        );
        assert!(!huge.is_permanent() && !huge.is_stopped());
        assert_eq!(JobError::retry("x").retry_delay(), None);
        assert_eq!(JobError::permanent("x").retry_delay(), None);
        assert!(JobError::permanent("x").is_permanent());
        let stopped = JobError::stopped();
        assert!(stopped.is_stopped() && !stopped.is_permanent());
        assert_eq!(stopped.retry_delay(), None);
        assert!(!JobError::retry("x").is_stopped() && !JobError::permanent("x").is_stopped());
        let word = std::mem::size_of::<u64>();
        assert_eq!(
            std::mem::size_of::<JobError>(),
            std::mem::size_of::<String>() + word
        );
    }
}
