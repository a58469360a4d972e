//! Queue settings, validated once at construction.

use core::time::Duration;

use crate::backoff::{Backoff, Jitter};
use crate::error::ConfigError;
use crate::event::EventMask;

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
}

impl Config {
    /// Defaults around a visibility timeout: 5 attempts, no backoff, no jitter, no lease cap,
    /// no capacity limit, every event but [`Delivered`](crate::Event::Delivered) recorded, and
    /// at most 4096 events buffered.
    pub const fn new(visibility: Duration) -> Self {
        Config {
            visibility,
            max_attempts: 5,
            backoff: Backoff::None,
            jitter: None,
            max_lease: None,
            capacity: None,
            events: EventMask::DEFAULT,
            event_capacity: 4096,
        }
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

    /// Delay before a failed item becomes visible again.
    pub const fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Randomize backoff delays, deterministically from the jitter's seed.
    pub const fn with_jitter(mut self, jitter: Jitter) -> Self {
        self.jitter = Some(jitter);
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
