//! What a durable store's read-only inspector shows of a stored item ([`StoredItem`]) and
//! of a queue ([`StoredCounts`]): its raw bytes and wall-clock times, read without opening
//! the queue (so without changing anything), for operator tools.

use std::time::SystemTime;

use leaseq_core::{MessageId, Reason};

/// Where a stored item is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoredState {
    /// Visible: the next receive may take it.
    Ready,
    /// Waiting for its delay (or backoff) to end.
    Delayed,
    /// Leased by a process (on SQLite: a lease of the file's owner, or of a process that
    /// died holding it, which comes back at the next open).
    InFlight,
    /// A dead letter.
    Dead,
}

impl StoredState {
    /// A short lower-case name ("ready", "delayed", "in flight", "dead").
    pub const fn as_str(self) -> &'static str {
        match self {
            StoredState::Ready => "ready",
            StoredState::Delayed => "delayed",
            StoredState::InFlight => "in flight",
            StoredState::Dead => "dead",
        }
    }
}

impl std::fmt::Display for StoredState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stored item as an inspector read it: its bytes as stored (whatever the codec), its
/// state, attempts and times on the wall clock.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredItem {
    /// Its id.
    pub id: MessageId,
    /// Where it is.
    pub state: StoredState,
    /// Deliveries so far.
    pub attempts: u32,
    /// Its priority level (0-7).
    pub priority: u8,
    /// Its unique key, if pushed with one.
    pub key: Option<Vec<u8>>,
    /// Its stored bytes, or `None` when larger than the inspector reads (see
    /// [`size`](Self::size)).
    pub payload: Option<Vec<u8>>,
    /// The stored bytes' length.
    pub size: u64,
    /// When it becomes visible, if delayed.
    pub visible_at: Option<SystemTime>,
    /// When its lease ends, if in flight and the store keeps leases (Postgres).
    pub deadline: Option<SystemTime>,
    /// Its own deadline, if pushed with a time to live.
    pub expires_at: Option<SystemTime>,
    /// Why it was dead-lettered (dead letters only).
    pub reason: Option<Reason>,
    /// The last failure's error, if any.
    pub last_error: Option<String>,
    /// When it was dead-lettered (dead letters only).
    pub dead_at: Option<SystemTime>,
}

impl StoredItem {
    /// An item with `id` in `state`, `size` bytes, nothing else known yet.
    pub fn new(id: MessageId, state: StoredState, size: u64) -> Self {
        StoredItem {
            id,
            state,
            attempts: 0,
            priority: 0,
            key: None,
            payload: None,
            size,
            visible_at: None,
            deadline: None,
            expires_at: None,
            reason: None,
            last_error: None,
            dead_at: None,
        }
    }
}

/// A queue's items counted by state, as stored now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredCounts {
    /// The queue's name (on SQLite, where a file holds one queue: the name its last open
    /// recorded, empty for a file that has none recorded).
    pub queue: String,
    /// Visible now.
    pub ready: u64,
    /// Waiting for a delay.
    pub delayed: u64,
    /// Leased.
    pub in_flight: u64,
    /// Dead letters.
    pub dead: u64,
    /// Whether the queue is paused (no lease handed out; pushes accepted).
    pub paused: bool,
    /// `Some(cap)`: each count above `cap` is an estimate (a reader that stops counting at
    /// `cap`, as the Postgres overview does on large tables), each at or below it exact.
    /// `None`: every count is exact.
    pub estimated_above: Option<u64>,
}

impl StoredCounts {
    /// Counts of `queue`.
    pub fn new(
        queue: impl Into<String>,
        ready: u64,
        delayed: u64,
        in_flight: u64,
        dead: u64,
    ) -> Self {
        StoredCounts {
            queue: queue.into(),
            ready,
            delayed,
            in_flight,
            dead,
            paused: false,
            estimated_above: None,
        }
    }

    /// These counts, each exact up to `cap` and an estimate above it.
    pub fn with_estimated_above(mut self, cap: u64) -> Self {
        self.estimated_above = Some(cap);
        self
    }

    /// Whether `n`, one of these counts, is an estimate.
    ///
    /// ```
    /// let c = leaseq_async::StoredCounts::new("q", 5, 0, 0, 1_200).with_estimated_above(1_000);
    /// assert!(!c.is_estimate(c.ready));
    /// assert!(c.is_estimate(c.dead));
    /// ```
    pub fn is_estimate(&self, n: u64) -> bool {
        self.estimated_above.is_some_and(|cap| n > cap)
    }

    /// Whether any of these counts is an estimate (so is their total).
    pub fn has_estimate(&self) -> bool {
        [self.ready, self.delayed, self.in_flight, self.dead]
            .iter()
            .any(|&n| self.is_estimate(n))
    }

    /// These counts with the queue's pause flag.
    pub fn with_paused(mut self, paused: bool) -> Self {
        self.paused = paused;
        self
    }

    /// Ready, delayed and in flight.
    pub fn live(&self) -> u64 {
        self.ready + self.delayed + self.in_flight
    }
}

/// A wall-clock time as tools show it, relative to `now`: "in 4.0s", "12.5s ago", in
/// minutes past two minutes ("3.5m"), in hours past two hours ("2.1h"). The CLI's and the
/// dashboard's one way of writing the times of [`StoredItem`]s, schedules and finished jobs.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
/// assert_eq!(leaseq_async::relative_time(now + Duration::from_secs(4), now), "in 4.0s");
/// assert_eq!(leaseq_async::relative_time(now - Duration::from_secs(210), now), "3.5m ago");
/// ```
pub fn relative_time(t: SystemTime, now: SystemTime) -> String {
    let show = |d: std::time::Duration| {
        let s = d.as_secs_f64();
        if s < 120.0 {
            format!("{s:.1}s")
        } else if s < 7200.0 {
            format!("{:.1}m", s / 60.0)
        } else {
            format!("{:.1}h", s / 3600.0)
        }
    };
    match t.duration_since(now) {
        Ok(d) => format!("in {}", show(d)),
        Err(e) => format!("{} ago", show(e.duration())),
    }
}
