//! Schedules kept in the queue's store, the seam's part: a schedule's stored state
//! ([`ScheduleState`]), one scheduler step to commit ([`ScheduleCommit`]: its ticks' pushes
//! and the cursor's move, in one commit, refused if the cursor moved since it was read) and
//! the answers ([`ScheduleCommitted`], [`ScheduleCommitError`]). The policy (which ticks)
//! is the core's `leaseq_core::schedule`; the [`Scheduler`](crate::Scheduler) drives it
//! through [`Store::schedule`](crate::Store::schedule) and
//! [`Store::commit_schedule`](crate::Store::commit_schedule).

use std::fmt;

use leaseq_core::{MessageId, Timestamp, UniqueKey};

use crate::error::PushError;
use crate::push::Push;
use crate::store_error::StoreError;

/// A schedule as its queue's store keeps it: the cursor every process running the schedule
/// plans from, and what operators see of it ([`LeaseQueue::schedules`](crate::LeaseQueue::schedules),
/// the read-only inspectors, `leaseq ... schedules`).
///
/// Times are on the wall clock (nanoseconds since the UNIX epoch), as the schedule's ticks.
/// The store only compares the cursor; the rest is what the scheduler stored with it at its
/// last commit (the store does not know the calendar).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct ScheduleState {
    /// The schedule's name (unique among the queue's schedules).
    pub name: String,
    /// The latest tick pushed or skipped (for a schedule that has pushed none yet: when it
    /// was set up, or the `starting_at` it was given). Ticks after it are due to be pushed.
    /// A tick pushed ahead of its time (within the schedule's lead) is behind the cursor
    /// already: the cursor may be in the future.
    pub cursor: Timestamp,
    /// The latest tick pushed (perhaps ahead of its time, delayed until it), if any.
    pub last_tick: Option<Timestamp>,
    /// The first tick after the cursor: the next one to push (`None`: the calendar has no
    /// further tick).
    pub next_tick: Option<Timestamp>,
    /// When the cursor last moved, on the clock of the scheduler that moved it (it never
    /// goes back).
    pub moved_at: Timestamp,
    /// The calendar in words, as the scheduler described it (`every 60s`, a cron expression
    /// and its zone), if it did.
    pub calendar: Option<String>,
}

impl ScheduleState {
    /// The state of schedule `name` with its cursor at `cursor`, moved at `moved_at`; no
    /// tick pushed, none next, no calendar said.
    pub fn new(name: impl Into<String>, cursor: Timestamp, moved_at: Timestamp) -> Self {
        ScheduleState {
            name: name.into(),
            cursor,
            last_tick: None,
            next_tick: None,
            moved_at,
            calendar: None,
        }
    }
}

/// One scheduler step, for [`Store::commit_schedule`](crate::Store::commit_schedule): in one
/// commit, if the schedule's stored cursor is still `expected`, push every tick's job, take
/// back the waiting holders of `withdraw`, and store `state`. Otherwise nothing.
#[non_exhaustive]
pub struct ScheduleCommit<T> {
    /// The cursor the step planned from, as read from the store (`None`: the store had no
    /// state for the schedule). The commit is refused ([`ScheduleCommitError::Moved`]) if
    /// the stored one is not this.
    pub expected: Option<Timestamp>,
    /// The schedule's state after the step (its name names the schedule).
    pub state: ScheduleState,
    /// Each tick's job and its push (the tick's unique key, a delay until its time), in
    /// tick order. A job refused as a duplicate key is counted, not an error.
    pub ticks: Vec<(T, Push)>,
    /// Keys of ticks pushed ahead that the catch-up policy no longer runs
    /// ([`Schedule::stale`](leaseq_core::schedule::Schedule::stale)): a waiting (ready or
    /// delayed) item holding one is dead-lettered as
    /// [`Reason::Expired`](leaseq_core::Reason::Expired); one in flight runs on.
    pub withdraw: Vec<UniqueKey>,
}

impl<T> ScheduleCommit<T> {
    /// A step moving the cursor from `expected` to `state`, pushing nothing.
    pub fn new(expected: Option<Timestamp>, state: ScheduleState) -> Self {
        ScheduleCommit {
            expected,
            state,
            ticks: Vec::new(),
            withdraw: Vec::new(),
        }
    }

    /// With `job` pushed as `push` says.
    pub fn push(mut self, job: T, push: Push) -> Self {
        self.ticks.push((job, push));
        self
    }

    /// With the waiting holder of `key` taken back.
    pub fn withdraw(mut self, key: UniqueKey) -> Self {
        self.withdraw.push(key);
        self
    }
}

impl<T> fmt::Debug for ScheduleCommit<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScheduleCommit")
            .field("expected", &self.expected)
            .field("state", &self.state)
            .field("ticks", &self.ticks.len())
            .field("withdraw", &self.withdraw)
            .finish()
    }
}

/// What a committed step did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScheduleCommitted {
    /// Each tick's item id, in the step's order; `None` for a tick refused as a duplicate
    /// key (a live item holds it: pushed by a driver that keeps no shared cursor, say).
    pub ids: Vec<Option<MessageId>>,
    /// The items taken back (the waiting holders of the step's `withdraw` keys), now dead
    /// letters of reason `Expired`.
    pub withdrawn: Vec<MessageId>,
}

impl ScheduleCommitted {
    /// Ticks pushed.
    pub fn pushed(&self) -> usize {
        self.ids.iter().filter(|id| id.is_some()).count()
    }

    /// Ticks refused as duplicate keys.
    pub fn duplicates(&self) -> usize {
        self.ids.len() - self.pushed()
    }
}

/// Why a step was not committed. Nothing of it was pushed, taken back or stored, except
/// with a [`Store`](ScheduleCommitError::Store) error whose outcome is unknown (then all
/// of it may have been: the next read of the schedule tells).
#[non_exhaustive]
pub enum ScheduleCommitError<T> {
    /// The stored cursor is not the one the step planned from: another scheduler moved it
    /// since it was read. Read it again and plan again.
    Moved,
    /// A tick's push was refused (the queue closed or full, the job would not encode or is
    /// too large, ...), its job inside: nothing of the step was done.
    Push(PushError<T>),
    /// The store failed: not done, or outcome unknown ([`StoreError::is_outcome_unknown`]).
    Store(StoreError),
}

impl<T> fmt::Debug for ScheduleCommitError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleCommitError::Moved => f.write_str("Moved"),
            ScheduleCommitError::Push(e) => f.debug_tuple("Push").field(e).finish(),
            ScheduleCommitError::Store(e) => f.debug_tuple("Store").field(e).finish(),
        }
    }
}

impl<T> fmt::Display for ScheduleCommitError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleCommitError::Moved => {
                f.write_str("the schedule's cursor moved since it was read (another scheduler)")
            }
            ScheduleCommitError::Push(_) => f.write_str("a scheduled job was refused"),
            ScheduleCommitError::Store(_) => f.write_str("the store failed to commit the step"),
        }
    }
}

impl<T: 'static> std::error::Error for ScheduleCommitError<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ScheduleCommitError::Moved => None,
            ScheduleCommitError::Push(e) => Some(e),
            ScheduleCommitError::Store(e) => Some(e),
        }
    }
}

impl<T> From<StoreError> for ScheduleCommitError<T> {
    fn from(e: StoreError) -> Self {
        ScheduleCommitError::Store(e)
    }
}
