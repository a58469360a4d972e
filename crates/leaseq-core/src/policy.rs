//! What a failed attempt becomes: the retry policy, as a pure function of the attempt.
//!
//! The core's [`Queue`](crate::Queue) decides through it, and so can a store that keeps its
//! items elsewhere (a database) and must apply the same policy without the queue.

use core::time::Duration;

use crate::backoff::{Backoff, SplitMix64};
use crate::config::Config;
use crate::event::Reason;
use crate::outcome::Retry;

/// The verdict of [`RetryPolicy::after_failure`] on an attempt that ended without an ack.
/// Not `non_exhaustive`: stores match it whole, so that a new verdict cannot slip past one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Delivered again: the item becomes visible `delay` after the failure.
    Retry {
        /// How long the item waits before it is visible again (backoff, jitter included, or
        /// the holder's own delay).
        delay: Duration,
    },
    /// To the dead letters, with `reason`.
    DeadLetter {
        /// Why: [`Reason::Expired`] when the item's own deadline had passed, else the
        /// reason the attempt failed with.
        reason: Reason,
    },
}

/// A [`Config`]'s retry policy: max attempts, backoff and jitter, with the jitter's own
/// seeded PRNG.
///
/// [`after_failure`](Self::after_failure) is the one rule for failed attempts: the same
/// calls on a policy made from the same config give the same verdicts (the jitter draws are
/// a deterministic sequence from the [`Jitter`](crate::Jitter) seed), so a store that
/// applies it itself decides exactly as the core would.
///
/// ```
/// use core::time::Duration;
/// use leaseq_core::{Backoff, Config, Reason, Retry, RetryPolicy, Verdict};
///
/// let config = Config::new(Duration::from_secs(1))
///     .with_max_attempts(2)
///     .with_backoff(Backoff::Fixed(Duration::from_millis(50)))
///     .without_jitter();
/// let mut policy = RetryPolicy::new(&config);
/// assert_eq!(
///     policy.after_failure(1, false, Reason::Nacked, Retry::Backoff),
///     Verdict::Retry { delay: Duration::from_millis(50) }
/// );
/// assert_eq!(
///     policy.after_failure(2, false, Reason::Nacked, Retry::Backoff),
///     Verdict::DeadLetter { reason: Reason::Nacked }
/// );
/// ```
#[derive(Clone, Debug)]
pub struct RetryPolicy {
    max_attempts: u32,
    backoff: Backoff,
    /// The jitter's largest share in percent; 0 for none.
    jitter_percent: u8,
    rng: SplitMix64,
}

impl RetryPolicy {
    /// The policy of `config`, its PRNG seeded from the config's jitter (0 without one).
    pub fn new(config: &Config) -> Self {
        RetryPolicy {
            max_attempts: config.max_attempts,
            backoff: config.backoff,
            jitter_percent: config.jitter.map_or(0, |j| j.percent()),
            rng: SplitMix64::new(config.jitter.map_or(0, |j| j.seed())),
        }
    }

    /// What an attempt that ended without an ack becomes. `attempts` is the item's
    /// deliveries so far (the failed one included); `expired` whether the item's own
    /// deadline had passed at the failure; `reason` why the attempt failed; `retry` the
    /// delay the holder asked for.
    ///
    /// An expired item is dead-lettered with [`Reason::Expired`]; an item at its last
    /// allowed attempt (`attempts >= max_attempts`) or failed with [`Retry::Never`] with
    /// `reason`. Otherwise it is retried
    /// after [`Retry::After`]'s delay exactly, or after the backoff for `attempts` failures
    /// shortened by the jitter. Only a jittered backoff draws from the PRNG.
    pub fn after_failure(
        &mut self,
        attempts: u32,
        expired: bool,
        reason: Reason,
        retry: Retry,
    ) -> Verdict {
        if expired {
            return Verdict::DeadLetter {
                reason: Reason::Expired,
            };
        }
        if attempts >= self.max_attempts {
            return Verdict::DeadLetter { reason };
        }
        let delay = match retry {
            Retry::After(d) => d,
            Retry::Backoff => self.jitter(self.backoff.delay(attempts)),
            Retry::Never => return Verdict::DeadLetter { reason },
        };
        Verdict::Retry { delay }
    }

    /// The attempts an item gets.
    pub(crate) fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// `delay` shortened by the jitter, drawing from the PRNG (nothing without jitter).
    pub(crate) fn jitter(&mut self, delay: Duration) -> Duration {
        self.rng.jitter(delay, self.jitter_percent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backoff::Jitter;

    fn config() -> Config {
        Config::new(Duration::from_secs(1))
            .with_max_attempts(3)
            .with_backoff(Backoff::exponential(
                Duration::from_millis(100),
                Duration::from_secs(1),
            ))
    }

    #[test]
    fn expired_wins_over_everything() {
        let mut p = RetryPolicy::new(&config());
        let expired = Reason::Expired;
        for (attempts, retry) in [(1, Retry::Backoff), (3, Retry::After(Duration::ZERO))] {
            let v = p.after_failure(attempts, true, Reason::Nacked, retry);
            assert_eq!(v, Verdict::DeadLetter { reason: expired });
        }
    }

    #[test]
    fn max_attempts_dead_letters_with_the_given_reason() {
        let mut p = RetryPolicy::new(&config());
        let after = Retry::After(Duration::from_millis(1));
        assert!(matches!(
            p.after_failure(2, false, Reason::TimedOut, after),
            Verdict::Retry { .. }
        ));
        for attempts in [3, 4, u32::MAX] {
            let v = p.after_failure(attempts, false, Reason::TimedOut, after);
            assert_eq!(
                v,
                Verdict::DeadLetter {
                    reason: Reason::TimedOut
                }
            );
        }
    }

    #[test]
    fn retry_after_is_exact_and_draws_nothing() {
        let jittered = config().with_jitter(Jitter::new(50, 9));
        let mut p = RetryPolicy::new(&jittered);
        let mut fresh = RetryPolicy::new(&jittered);
        let d = Duration::from_millis(37);
        for attempts in 1..3 {
            let v = p.after_failure(attempts, false, Reason::Nacked, Retry::After(d));
            assert_eq!(v, Verdict::Retry { delay: d });
        }
        // No draw was made: the next backoff is the same as a fresh policy's first.
        assert_eq!(
            p.after_failure(1, false, Reason::Nacked, Retry::Backoff),
            fresh.after_failure(1, false, Reason::Nacked, Retry::Backoff)
        );
    }

    #[test]
    fn never_dead_letters_at_once_with_the_reason_unless_expired() {
        let mut p = RetryPolicy::new(&config());
        let v = p.after_failure(1, false, Reason::Nacked, Retry::Never);
        let reason = Reason::Nacked;
        assert_eq!(v, Verdict::DeadLetter { reason });
        let v = p.after_failure(1, true, Reason::Nacked, Retry::Never);
        let reason = Reason::Expired;
        assert_eq!(v, Verdict::DeadLetter { reason });
    }

    #[test]
    fn backoff_without_jitter_is_the_backoff() {
        // Without the default config's jitter.
        let mut p = RetryPolicy::new(&config().without_jitter());
        for (attempts, ms) in [(1, 100), (2, 200)] {
            let v = p.after_failure(attempts, false, Reason::LeaseExpired, Retry::Backoff);
            let delay = Duration::from_millis(ms);
            assert_eq!(v, Verdict::Retry { delay });
        }
    }

    /// The default config backs off: 1 s doubling to 10 min, each delay drawn from its upper
    /// half, the same draws from the same calls.
    #[test]
    fn the_default_backs_off_exponentially_with_equal_jitter() {
        let config = Config::new(Duration::from_secs(30)).with_max_attempts(40);
        let (mut a, mut b) = (RetryPolicy::new(&config), RetryPolicy::new(&config));
        let mut below_full = 0;
        for attempts in 1..40u32 {
            let full =
                Duration::from_secs(1 << (attempts - 1).min(10)).min(Duration::from_secs(600));
            let v = a.after_failure(attempts, false, Reason::Nacked, Retry::Backoff);
            assert_eq!(
                v,
                b.after_failure(attempts, false, Reason::Nacked, Retry::Backoff)
            );
            let Verdict::Retry { delay } = v else {
                panic!("{v:?}")
            };
            assert!(
                delay <= full && delay >= full / 2,
                "{attempts}: {delay:?} of {full:?}"
            );
            below_full += usize::from(delay < full);
        }
        assert!(
            below_full > 30,
            "the jitter drew {below_full} shorter delays of 39"
        );
    }

    #[test]
    fn jittered_backoff_stays_in_range_and_repeats_from_the_seed() {
        let jittered = config().with_jitter(Jitter::new(30, 7));
        let (mut a, mut b) = (RetryPolicy::new(&jittered), RetryPolicy::new(&jittered));
        let mut rng = SplitMix64::new(7);
        for i in 0..1000u32 {
            let attempts = 1 + i % 2;
            let full = config().backoff.delay(attempts);
            let v = a.after_failure(attempts, false, Reason::Nacked, Retry::Backoff);
            assert_eq!(
                v,
                b.after_failure(attempts, false, Reason::Nacked, Retry::Backoff)
            );
            let Verdict::Retry { delay } = v else {
                panic!("{v:?}")
            };
            assert!(delay <= full && delay >= full * 7 / 10, "{delay:?}");
            // The same sequence as the PRNG the queue always used.
            assert_eq!(delay, rng.jitter(full, 30));
        }
    }
}
