//! Periodic jobs on a queue of any store: a [`Scheduler`] plans with the core's
//! [`Schedule`] policy and pushes each tick under its unique key.
//!
//! The policy (which ticks, after a gap, with which key, a clock stepping back) is the
//! core's `leaseq_core::schedule`; this file only reads the wall clock, pushes and sleeps.
//! One timer, made once and reset to each wake-up, on the queue's runtime.

#[cfg(feature = "cron")]
mod cron;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leaseq_core::schedule::{Calendar, Schedule, Skipped};
use leaseq_core::Timestamp;

use crate::error::PushError;
use crate::push::Push;
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;
use crate::store::Store;

#[cfg(feature = "cron")]
pub use self::cron::{CronCalendar, CronError};

/// A wall clock: nanoseconds since the UNIX epoch.
pub type WallClock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// The system's wall clock (`SystemTime`), as nanoseconds since the UNIX epoch; a clock set
/// before the epoch reads as the epoch.
pub fn system_clock() -> Timestamp {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(Timestamp::ZERO, Timestamp::from_duration)
}

/// Pushes a job per tick of a [`Schedule`] into a queue, once per tick across every process
/// that runs the same schedule on a shared durable queue (see the core's
/// `leaseq_core::schedule` docs: the tick's time is its unique key, and the schedule's lead
/// must exceed the clock skew between processes).
///
/// [`run`](Self::run) is the loop to spawn; [`run_once`](Self::run_once) is one step of it
/// (plan, push, report), for tests and for drivers of your own. The cursor (the latest
/// tick pushed or skipped) starts at the wall clock's reading on the first step, so no tick
/// before the scheduler started runs, unless [`starting_at`](Self::starting_at) says
/// otherwise; keep [`cursor`](Self::cursor) somewhere durable to resume after a restart.
///
/// ```
/// use std::time::Duration;
/// use leaseq_async::core::schedule::{Interval, Schedule};
/// use leaseq_async::{Config, LeaseQueue, Runtime, Scheduler, SimRuntime, Timestamp};
///
/// let rt = SimRuntime::new();
/// rt.block_on({
///     let rt = rt.clone();
///     async move {
///         let queue = LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(5))).unwrap();
///         let every_minute = Interval::new(Duration::from_secs(60), Timestamp::ZERO).unwrap();
///         let schedule = Schedule::new("rollup", every_minute).unwrap()
///             .with_lead(Duration::from_secs(2));
///         // The wall clock of this example is the virtual one.
///         let clock = rt.clone();
///         let mut scheduler = Scheduler::new(schedule).with_clock(move || clock.now());
///         let step = scheduler.run_once(&queue, |tick| tick).await.unwrap();
///         assert_eq!((step.pushed, step.wake_at), (0, Timestamp::from_nanos(58_000_000_000)));
///     }
/// });
/// ```
pub struct Scheduler<C> {
    schedule: Schedule<C>,
    clock: WallClock,
    cursor: Option<Timestamp>,
    retry_after: Duration,
}

/// What one [`Scheduler::run_once`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchedulerStep {
    /// Ticks pushed by this process.
    pub pushed: usize,
    /// Ticks refused as duplicate keys: another process (or an earlier run) had pushed them
    /// and their job is not finished yet. Not an error.
    pub duplicates: usize,
    /// Missed ticks skipped by the schedule's catch-up policy.
    pub skipped: Option<Skipped>,
    /// When the next step is due, on the wall clock ([`Timestamp::MAX`]: never).
    pub wake_at: Timestamp,
}

impl<C: Calendar> Scheduler<C> {
    /// The longest [`run`](Self::run) sleeps before it reads the wall clock again, so that
    /// a wall clock stepped forward or back is noticed within it.
    pub const RECHECK: Duration = Duration::from_secs(60);

    /// A scheduler for `schedule` on the system's wall clock.
    pub fn new(schedule: Schedule<C>) -> Self {
        Scheduler {
            schedule,
            clock: Arc::new(system_clock),
            cursor: None,
            retry_after: Duration::from_secs(1),
        }
    }

    /// Reads the wall time from `clock` (nanoseconds since the UNIX epoch) instead of the
    /// system's: for tests on virtual time.
    pub fn with_clock(mut self, clock: impl Fn() -> Timestamp + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Starts the cursor at `cursor` (ticks after it are due) rather than at the first
    /// step's wall time: to resume from a saved cursor, or to backfill a window.
    pub fn starting_at(mut self, cursor: Timestamp) -> Self {
        self.cursor = Some(cursor);
        self
    }

    /// How long [`run`](Self::run) waits before trying again after a push failed (other than
    /// as a duplicate or on a closed queue). Default 1 s.
    pub fn retry_after(mut self, delay: Duration) -> Self {
        self.retry_after = delay;
        self
    }

    /// The schedule.
    pub fn schedule(&self) -> &Schedule<C> {
        &self.schedule
    }

    /// The latest tick pushed or skipped (`None` before the first step).
    pub fn cursor(&self) -> Option<Timestamp> {
        self.cursor
    }

    /// One step: plans at the wall clock's `now` and pushes each due tick (and each within
    /// the lead, delayed until its time) with `Push::new().key(tick key)`, the job made by
    /// `job(tick)`. A duplicate key is counted, not an error. On another refusal the step
    /// stops and returns it: the cursor then stays before the refused tick (after it for
    /// [`PushError::Unconfirmed`], whose item stays queued), so the next step tries it again.
    pub async fn run_once<T, R, S, F>(
        &mut self,
        queue: &LeaseQueue<T, R, S>,
        mut job: F,
    ) -> Result<SchedulerStep, PushError<T>>
    where
        R: Runtime,
        S: Store<T, Runtime = R>,
        F: FnMut(Timestamp) -> T,
    {
        let now = (self.clock)();
        let cursor = *self.cursor.get_or_insert(now);
        let plan = self.schedule.plan(cursor, now);
        // Skipped ticks come before every planned one: behind the cursor at once.
        self.cursor = Some(plan.skipped.map_or(cursor, |s| s.last.max(cursor)));
        let (mut pushed, mut duplicates) = (0, 0);
        for &tick in &plan.ticks {
            let key = self.schedule.key(tick);
            let push = Push::new()
                .key(key.as_bytes())
                .delay(tick.saturating_duration_since(now));
            match queue.push_with(job(tick), push).await {
                Ok(_) => pushed += 1,
                Err(PushError::DuplicateKey { .. }) => duplicates += 1,
                Err(e) => {
                    if matches!(e, PushError::Unconfirmed { .. }) {
                        self.cursor = Some(tick);
                    }
                    return Err(e);
                }
            }
            self.cursor = Some(tick);
        }
        self.cursor = Some(plan.cursor);
        Ok(SchedulerStep {
            pushed,
            duplicates,
            skipped: plan.skipped,
            wake_at: plan.wake_at,
        })
    }

    /// Runs the schedule until `queue` is closed: a step, then a sleep on the queue's
    /// runtime until the step's wake-up (at most [`RECHECK`](Self::RECHECK)), and again.
    /// Spawn it, and abort or drop it to stop it sooner; it notices a closed queue when it
    /// next wakes, and then returns `Ok`.
    ///
    /// A push the store could not do now ([`PushError::Store`], [`PushError::Unconfirmed`])
    /// is tried again after [`retry_after`](Self::retry_after). A refusal that would repeat
    /// (the store has no unique keys: [`PushError::Unsupported`]; the codec refused the job;
    /// ...) ends the loop and is returned, the job handed back inside.
    pub async fn run<T, R, S, F>(
        mut self,
        queue: LeaseQueue<T, R, S>,
        mut job: F,
    ) -> Result<(), PushError<T>>
    where
        R: Runtime,
        S: Store<T, Runtime = R>,
        F: FnMut(Timestamp) -> T,
    {
        let rt = queue.runtime().clone();
        let mut timer = rt.timer(Timestamp::MAX);
        while !queue.is_closed() {
            let sleep = match self.run_once(&queue, &mut job).await {
                Ok(step) => step.wake_at.saturating_duration_since((self.clock)()),
                Err(PushError::Closed(_)) => return Ok(()),
                Err(error @ (PushError::Store { .. } | PushError::Unconfirmed { .. })) => {
                    #[cfg(feature = "tracing")]
                    tracing::warn!(
                        schedule = self.schedule.name(),
                        %error,
                        "leaseq: a scheduled push failed; trying again"
                    );
                    drop(error);
                    self.retry_after
                }
                Err(error) => return Err(error),
            };
            rt.reset_timer(
                &mut timer,
                rt.now().saturating_add(sleep.min(Self::RECHECK)),
            );
            (&mut timer).await;
        }
        Ok(())
    }
}

impl<C: std::fmt::Debug> std::fmt::Debug for Scheduler<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("schedule", &self.schedule)
            .field("cursor", &self.cursor)
            .finish_non_exhaustive()
    }
}
