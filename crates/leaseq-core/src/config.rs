//! Queue settings, validated once at construction.

use core::time::Duration;

use crate::backoff::{Backoff, Jitter};
use crate::error::ConfigError;
use crate::event::EventMask;
use crate::flow::GroupDeadLetter;

/// Settings of a [`Queue`](crate::Queue).
///
/// Build one with [`Config::new`] and the `with_*` methods; [`Queue::new`](crate::Queue::new)
/// validates it and returns a [`ConfigError`] naming the first setting that cannot work.
///
/// ```
/// use core::time::Duration;
/// use leaseq_core::{Backoff, Config, Queue};
///
/// let config = Config::new(Duration::from_millis(500))
///     .with_max_attempts(3)
///     .with_backoff(Backoff::exponential(Duration::from_millis(10), Duration::from_secs(1)))
///     .with_max_lease(Duration::from_secs(30))
///     .with_capacity(10_000);
/// let queue: Queue<u64> = Queue::new(config).unwrap();
/// assert_eq!(queue.config().max_attempts(), 3);
/// ```
///
/// With the `serde` feature a config (with its [`Backoff`], [`Jitter`] and [`EventMask`])
/// serializes and deserializes, durations as `{ secs, nanos }`. A deserialized config is
/// not checked until [`Queue::new`](crate::Queue::new) validates it, like any other.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Config {
    pub(crate) visibility: Duration,
    pub(crate) max_attempts: u32,
    pub(crate) backoff: Backoff,
    pub(crate) jitter: Option<Jitter>,
    pub(crate) max_lease: Option<Duration>,
    pub(crate) capacity: Option<usize>,
    pub(crate) events: EventMask,
    pub(crate) event_capacity: usize,
    /// Absent from configs serialized before it existed: the default.
    #[cfg_attr(feature = "serde", serde(default = "default_max_snoozes"))]
    pub(crate) max_snoozes: u32,
    /// Absent from configs serialized before it existed: the default (`Release`).
    #[cfg_attr(feature = "serde", serde(default))]
    pub(crate) group_dead_letter: GroupDeadLetter,
}

#[cfg(feature = "serde")]
const fn default_max_snoozes() -> u32 {
    Config::DEFAULT_MAX_SNOOZES
}

impl Config {
    /// The default backoff: 1 s after the first failure, doubling to at most 10 minutes
    /// (1 s, 2 s, 4 s, 8 s, ... 512 s, then 600 s).
    ///
    /// A failed job is not retried at once, so that it does not hammer what it calls; the
    /// first retry is quick enough for a passing fault, and the cap (Celery's
    /// `retry_backoff_max`) keeps a raised `max_attempts` from waiting hours between tries.
    /// With the default 5 attempts, an item that always fails is dead-lettered 15 s after
    /// its first failure at most (7.5 s at least, with [`DEFAULT_JITTER`](Self::DEFAULT_JITTER)).
    /// Job queues that live longer wait longer (Oban 2^attempt s with jitter, River and
    /// Sidekiq about attempt^4 s, graphile-worker e^attempt s, over 20 to 25 attempts); SQS
    /// waits one visibility timeout.
    pub const DEFAULT_BACKOFF: Backoff = Backoff::Exponential {
        base: Duration::from_secs(1),
        factor: 2,
        max: Duration::from_secs(600),
    };

    /// The default jitter: "equal jitter", each backoff delay `d` drawn from `[d/2, d]`
    /// (50 %), from seed 0.
    ///
    /// Items that failed together (a dependency down for all of them) come back spread over
    /// half their delay instead of all at once, while a retry still waits at least half its
    /// backoff (a "full jitter" of 100 % could draw a delay of zero, an immediate retry).
    /// The draws are a deterministic sequence from the seed, as for any [`Jitter`]: the
    /// queue decides the same way given the same operations and times.
    pub const DEFAULT_JITTER: Jitter = Jitter::new(50, 0);

    /// Defaults around a visibility timeout: 5 attempts, exponential backoff with jitter
    /// ([`DEFAULT_BACKOFF`](Self::DEFAULT_BACKOFF): 1 s doubling to at most 10 minutes;
    /// [`DEFAULT_JITTER`](Self::DEFAULT_JITTER): each delay drawn from its upper half), no
    /// lease cap, no capacity limit, every event but [`Delivered`](crate::Event::Delivered)
    /// recorded, and at most 4096 events buffered.
    ///
    /// For a retry at once, as before, set `.with_backoff(Backoff::None)` (the jitter then
    /// has nothing to shorten).
    pub const fn new(visibility: Duration) -> Self {
        Config {
            visibility,
            max_attempts: 5,
            backoff: Self::DEFAULT_BACKOFF,
            jitter: Some(Self::DEFAULT_JITTER),
            max_lease: None,
            capacity: None,
            events: EventMask::DEFAULT,
            event_capacity: 4096,
            max_snoozes: Self::DEFAULT_MAX_SNOOZES,
            group_dead_letter: GroupDeadLetter::Release,
        }
    }

    /// The default bound on an item's snoozes ([`Queue::snooze`](crate::Queue::snooze)):
    /// 25, then each further snooze counts as an attempt.
    pub const DEFAULT_MAX_SNOOZES: u32 = 25;

    /// How many times an item may be snoozed without counting an attempt (default
    /// [`DEFAULT_MAX_SNOOZES`](Self::DEFAULT_MAX_SNOOZES)). Each snooze beyond it counts as
    /// a failed attempt (reason [`Released`](crate::Reason::Released), last error "snooze
    /// limit reached"), so that an item snoozing forever ends in the dead letters once its
    /// attempts run out. 0: every snooze counts.
    pub const fn with_max_snoozes(mut self, max_snoozes: u32) -> Self {
        self.max_snoozes = max_snoozes;
        self
    }

    /// What a dead letter does to its ordered group ([`GroupDeadLetter`]): releases it (the
    /// default: the next item goes) or blocks it until the dead letter is redriven or
    /// purged.
    pub const fn group_dead_letter(mut self, choice: GroupDeadLetter) -> Self {
        self.group_dead_letter = choice;
        self
    }

    /// What a dead letter does to its ordered group.
    pub const fn group_dead_letter_choice(&self) -> GroupDeadLetter {
        self.group_dead_letter
    }

    /// The bound on an item's uncounted snoozes.
    pub const fn max_snoozes(&self) -> u32 {
        self.max_snoozes
    }

    /// How long a received item stays invisible unless it is acked or extended.
    pub const fn with_visibility(mut self, visibility: Duration) -> Self {
        self.visibility = visibility;
        self
    }

    /// How many deliveries an item gets. The failure of the last one dead-letters the item.
    pub const fn with_max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    /// Delay before a failed item becomes visible again (default:
    /// [`DEFAULT_BACKOFF`](Self::DEFAULT_BACKOFF)).
    pub const fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Randomize backoff delays, deterministically from the jitter's seed (default:
    /// [`DEFAULT_JITTER`](Self::DEFAULT_JITTER); [`without_jitter`](Self::without_jitter)
    /// for none).
    pub const fn with_jitter(mut self, jitter: Jitter) -> Self {
        self.jitter = Some(jitter);
        self
    }

    /// No jitter: backoff delays as the backoff says, exactly.
    pub const fn without_jitter(mut self) -> Self {
        self.jitter = None;
        self
    }

    /// The longest a lease may last from its receive, whatever the extensions.
    pub const fn with_max_lease(mut self, max_lease: Duration) -> Self {
        self.max_lease = Some(max_lease);
        self
    }

    /// The most items the queue holds at once (ready, delayed and in flight; dead letters
    /// not counted). A push beyond it fails with the item handed back.
    pub const fn with_capacity(mut self, capacity: usize) -> Self {
        self.capacity = Some(capacity);
        self
    }

    /// Which kinds of [`Event`](crate::Event) are recorded for [`Queue::poll_event`](crate::Queue::poll_event).
    pub const fn with_events(mut self, events: EventMask) -> Self {
        self.events = events;
        self
    }

    /// How many unpolled events are kept; beyond it the oldest are dropped and counted in
    /// [`Stats::events_dropped`](crate::Stats::events_dropped).
    pub const fn with_event_capacity(mut self, event_capacity: usize) -> Self {
        self.event_capacity = event_capacity;
        self
    }

    /// The visibility timeout.
    pub const fn visibility(&self) -> Duration {
        self.visibility
    }
    /// Deliveries per item.
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }
    /// The backoff policy.
    pub const fn backoff(&self) -> &Backoff {
        &self.backoff
    }
    /// The jitter, if any.
    pub const fn jitter(&self) -> Option<Jitter> {
        self.jitter
    }
    /// The lease lifetime cap, if any.
    pub const fn max_lease(&self) -> Option<Duration> {
        self.max_lease
    }
    /// The capacity, if any.
    pub const fn capacity(&self) -> Option<usize> {
        self.capacity
    }
    /// The recorded event kinds.
    pub const fn events(&self) -> EventMask {
        self.events
    }
    /// The event buffer bound.
    pub const fn event_capacity(&self) -> usize {
        self.event_capacity
    }

    /// Checks every setting; [`Queue::new`](crate::Queue::new) calls this.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.visibility.is_zero() {
            return Err(ConfigError::ZeroVisibility);
        }
        if self.max_attempts == 0 {
            return Err(ConfigError::ZeroAttempts);
        }
        if let Some(max_lease) = self.max_lease {
            if max_lease < self.visibility {
                return Err(ConfigError::MaxLeaseBelowVisibility {
                    max_lease,
                    visibility: self.visibility,
                });
            }
        }
        if self.capacity == Some(0) {
            return Err(ConfigError::ZeroCapacity);
        }
        self.backoff.validate()?;
        if let Some(j) = self.jitter {
            if j.percent() > 100 {
                return Err(ConfigError::JitterAbove100Percent(j.percent()));
            }
        }
        Ok(())
    }
}
