//! Periodic jobs on a queue of any store: a [`Scheduler`] plans with the core's
//! [`Schedule`] policy from the cursor kept in the queue's store, and commits each step (its
//! ticks' pushes, the stale ticks taken back, the cursor's move) as one compare-and-set.
//!
//! The policy (which ticks, after a gap, with which key, a clock stepping back, which ticks
//! pushed ahead are stale) is the core's `leaseq_core::schedule`; the state and its
//! compare-and-set are the store's (`Store::schedule`, `Store::commit_schedule`); this file
//! only reads the wall clock, plans, commits and sleeps. One timer, made once and reset to
//! each wake-up, on the queue's runtime.

#[cfg(feature = "cron")]
mod cron;
mod error;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leaseq_core::schedule::{Calendar, Schedule, Skipped};
use leaseq_core::Timestamp;

use crate::error::PushError;
use crate::push::Push;
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;
use crate::schedule_store::{ScheduleCommit, ScheduleCommitError, ScheduleState};
use crate::store::Store;

#[cfg(feature = "cron")]
pub use self::cron::{CronCalendar, CronError};
pub use self::error::SchedulerError;

/// A wall clock: nanoseconds since the UNIX epoch.
pub type WallClock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// The system's wall clock (`SystemTime`), as nanoseconds since the UNIX epoch; a clock set
/// before the epoch reads as the epoch.
pub fn system_clock() -> Timestamp {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(Timestamp::ZERO, Timestamp::from_duration)
}

/// Pushes a job per tick of a [`Schedule`] into a queue, each tick exactly once however
/// many processes run the same schedule on the queue, and the ticks missed while every
/// process was down caught up after a restart as the schedule's
/// [`CatchUp`](leaseq_core::schedule::CatchUp) says.
///
/// The schedule's cursor (the latest tick pushed or skipped) lives in the queue's store
/// ([`ScheduleState`]: the memory store's state, a table of the SQLite file, a table of the
/// Postgres schema). Each step reads it, plans with the core
/// ([`Schedule::plan`](leaseq_core::schedule::Schedule::plan)) and commits, in one store
/// commit, the pushes of the planned ticks (each under its tick's unique key, delayed until
/// its time) and the cursor's move, refused if another scheduler moved the cursor since the
/// read (compare-and-set): then it reads again and plans again, so no tick is pushed twice
/// and a lost race is neither a duplicate nor an error. The unique keys stay a second
/// guard (a tick refused as a duplicate key is counted, not pushed).
///
/// On the first step of a schedule the store does not know yet, the cursor starts at the
/// wall clock (no tick before it runs) or at [`starting_at`](Self::starting_at); from then
/// on every scheduler of the schedule, in any process, after any restart, resumes from the
/// stored cursor.
///
/// **After an outage.** Ticks due while every process was down are missed ticks at the next
/// step: [`CatchUp`](leaseq_core::schedule::CatchUp) decides which run (`Once`, the
/// default: the latest, once). So do the ticks the last step pushed ahead within the lead
/// whose time passed meanwhile: left alone they would all run at the restart, late and at
/// once; the step that finds them takes back, in its commit, those the policy would not run
/// ([`Schedule::stale`](leaseq_core::schedule::Schedule::stale); still waiting ones become
/// dead letters of reason [`Expired`](leaseq_core::Reason::Expired), so operators see them;
/// one already started runs on). So an outage costs one late run with `Once`, none with a
/// `Skip` past its grace, and at most the `limit` latest ticks with `All`. Why not a time to
/// live on each tick instead: an item's time to live also caps its lease, so a job that
/// runs longer than its window would be cut.
///
/// [`run`](Self::run) is the loop to spawn; [`run_once`](Self::run_once) is one step of it
/// (read, plan, commit, report), for tests and for drivers of your own.
/// [`LeaseQueue::schedules`](crate::LeaseQueue::schedules) shows each schedule's stored
/// state.
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
///         let mut scheduler = Scheduler::new(schedule.clone()).with_clock(move || clock.now());
///         let step = scheduler.run_once(&queue, |tick| tick).await.unwrap();
///         assert_eq!((step.pushed, step.wake_at), (0, Timestamp::from_nanos(58_000_000_000)));
///         // The cursor is in the queue's store, with the next tick.
///         let stored = &queue.schedules().await.unwrap()[0];
///         assert_eq!(stored.next_tick, Some(Timestamp::from_nanos(60_000_000_000)));
///         assert_eq!(stored.calendar.as_deref(), Some("every 60s"));
///         // A scheduler made later (a restart) resumes from it.
///         rt.sleep_until(Timestamp::from_nanos(58_000_000_000)).await;
///         let clock = rt.clone();
///         let mut restarted = Scheduler::new(schedule).with_clock(move || clock.now());
///         assert_eq!(restarted.run_once(&queue, |tick| tick).await.unwrap().pushed, 1);
///     }
/// });
/// ```
pub struct Scheduler<C> {
    schedule: Schedule<C>,
    clock: WallClock,
    /// Where a schedule the store does not know starts (`None`: the first step's time).
    start: Option<Timestamp>,
    /// The cursor as last read or committed.
    cursor: Option<Timestamp>,
    retry_after: Duration,
    /// The calendar in words, stored with each step.
    calendar: Option<String>,
}

/// What one [`Scheduler::run_once`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchedulerStep {
    /// Ticks pushed by this step.
    pub pushed: usize,
    /// Ticks refused as duplicate keys: a live item holds the tick's key (pushed by a
    /// driver that keeps no shared cursor, say). Not an error.
    pub duplicates: usize,
    /// Ticks pushed ahead that the catch-up policy no longer runs, taken back (dead
    /// letters of reason `Expired`).
    pub withdrawn: usize,
    /// Commits refused because another scheduler had moved the cursor since it was read:
    /// each time, the step read the cursor again and planned again.
    pub conflicts: usize,
    /// Missed ticks skipped by the schedule's catch-up policy.
    pub skipped: Option<Skipped>,
    /// When the next step is due, on the wall clock ([`Timestamp::MAX`]: never).
    pub wake_at: Timestamp,
}

impl<C: Calendar> Scheduler<C> {
    /// The longest [`run`](Self::run) sleeps before it reads the wall clock again, so that
    /// a wall clock stepped forward or back is noticed within it.
    pub const RECHECK: Duration = Duration::from_secs(60);

    /// The most commits one step tries (each after another scheduler moved the cursor);
    /// then it returns, due again at once.
    pub const MAX_CONFLICTS: usize = 64;

    /// A scheduler for `schedule` on the system's wall clock.
    pub fn new(schedule: Schedule<C>) -> Self {
        let calendar = schedule.calendar().describe();
        Scheduler {
            schedule,
            clock: Arc::new(system_clock),
            start: None,
            cursor: None,
            retry_after: Duration::from_secs(1),
            calendar,
        }
    }

    /// Reads the wall time from `clock` (nanoseconds since the UNIX epoch) instead of the
    /// system's: for tests on virtual time.
    pub fn with_clock(mut self, clock: impl Fn() -> Timestamp + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Starts a schedule the store has no state for at `cursor` (ticks after it are due)
    /// rather than at the first step's wall time: to backfill a window. Once the store has
    /// the schedule's state, its cursor is where every scheduler resumes, and this is not
    /// used.
    pub fn starting_at(mut self, cursor: Timestamp) -> Self {
        self.start = Some(cursor);
        self
    }

    /// How long [`run`](Self::run) waits before trying again after a step failed for a
    /// reason that may pass (the store failed; the queue was full). Default 1 s.
    pub fn retry_after(mut self, delay: Duration) -> Self {
        self.retry_after = delay;
        self
    }

    /// The schedule.
    pub fn schedule(&self) -> &Schedule<C> {
        &self.schedule
    }

    /// The schedule's cursor as this scheduler last read or committed it (`None` before the
    /// first step). The store's is the truth: another process may have moved it since.
    pub fn cursor(&self) -> Option<Timestamp> {
        self.cursor
    }

    /// One step: reads the schedule's stored state, plans at the wall clock's `now` from
    /// its cursor, and commits in one store commit, if the cursor is still the one read:
    /// each due tick's job and each within the lead (delayed until its time) pushed with
    /// `Push::new().key(tick key)`, the jobs made by `job(tick)`; the stale ticks pushed
    /// ahead taken back; the new state. When another scheduler moved the cursor in between
    /// it reads and plans again ([`SchedulerStep::conflicts`]), at most
    /// [`MAX_CONFLICTS`](Self::MAX_CONFLICTS) times. Nothing to do (no tick due or within
    /// the lead, nothing stale): no commit.
    ///
    /// `job` may be called for a tick that is then not pushed (a lost race, a refused
    /// step): make jobs, do not act in it. On an error nothing of the step was done (for a
    /// store failure whose outcome is unknown, perhaps all of it: the next step reads what
    /// the store has).
    pub async fn run_once<T, R, S, F>(
        &mut self,
        queue: &LeaseQueue<T, R, S>,
        mut job: F,
    ) -> Result<SchedulerStep, SchedulerError<T>>
    where
        R: Runtime,
        S: Store<T, Runtime = R>,
        F: FnMut(Timestamp) -> T,
    {
        let store = queue.store();
        let name = self.schedule.name();
        let mut conflicts = 0;
        loop {
            let stored = store.schedule(name).await.map_err(SchedulerError::Store)?;
            let now = (self.clock)();
            // `since`: when the cursor last moved; the ticks pushed ahead then and due now
            // are checked for staleness. A new schedule pushed nothing ahead.
            let (expected, cursor, since, moved_at, last_tick) = match &stored {
                Some(s) => (
                    Some(s.cursor),
                    s.cursor,
                    s.moved_at,
                    now.max(s.moved_at),
                    s.last_tick,
                ),
                None => {
                    let start = self.start.unwrap_or(now);
                    (None, start, start, now, None)
                }
            };
            self.cursor = Some(cursor);
            let plan = self.schedule.plan(cursor, now);
            let stale = self.schedule.stale(since, cursor, now);
            let quiet = plan.ticks.is_empty() && plan.cursor == cursor && stale.is_empty();
            if quiet && expected.is_some() {
                return Ok(SchedulerStep {
                    pushed: 0,
                    duplicates: 0,
                    withdrawn: 0,
                    conflicts,
                    skipped: None,
                    wake_at: plan.wake_at,
                });
            }
            let mut state = ScheduleState::new(name, plan.cursor, moved_at);
            state.last_tick = plan.ticks.last().copied().max(last_tick);
            state.next_tick = self.schedule.next_tick(plan.cursor);
            state.calendar = self.calendar.clone();
            let mut step = ScheduleCommit::new(expected, state);
            for &tick in &plan.ticks {
                let push = Push::new()
                    .key(self.schedule.key(tick).as_bytes())
                    .delay(tick.saturating_duration_since(now));
                step = step.push(job(tick), push);
            }
            for &tick in &stale {
                step = step.withdraw(self.schedule.key(tick));
            }
            match store.commit_schedule(step).await {
                Ok(done) => {
                    self.cursor = Some(plan.cursor);
                    return Ok(SchedulerStep {
                        pushed: done.pushed(),
                        duplicates: done.duplicates(),
                        withdrawn: done.withdrawn.len(),
                        conflicts,
                        skipped: plan.skipped,
                        wake_at: plan.wake_at,
                    });
                }
                Err(ScheduleCommitError::Moved) => {
                    conflicts += 1;
                    if conflicts >= Self::MAX_CONFLICTS {
                        return Ok(SchedulerStep {
                            pushed: 0,
                            duplicates: 0,
                            withdrawn: 0,
                            conflicts,
                            skipped: None,
                            wake_at: now,
                        });
                    }
                }
                Err(ScheduleCommitError::Push(e)) => return Err(SchedulerError::Push(e)),
                Err(ScheduleCommitError::Store(e)) => return Err(SchedulerError::Store(e)),
            }
        }
    }

    /// Runs the schedule until `queue` is closed: a step, then a sleep on the queue's
    /// runtime until the step's wake-up (at most [`RECHECK`](Self::RECHECK)), and again.
    /// Spawn it, and abort or drop it to stop it sooner (a step cut short commits all of
    /// itself or nothing); it notices a closed queue when it next wakes, and then returns
    /// `Ok`.
    ///
    /// A step that failed for a reason that may pass (the store failed:
    /// [`SchedulerError::Store`]; the queue was full, or a push could not be stored now) is
    /// tried again after [`retry_after`](Self::retry_after). A refusal that would repeat
    /// (the store has no unique keys: [`PushError::Unsupported`]; the codec refused the job;
    /// ...) ends the loop and is returned, the job handed back inside.
    pub async fn run<T, R, S, F>(
        mut self,
        queue: LeaseQueue<T, R, S>,
        mut job: F,
    ) -> Result<(), SchedulerError<T>>
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
                Err(SchedulerError::Push(PushError::Closed(_))) => return Ok(()),
                Err(
                    error @ (SchedulerError::Store(_)
                    | SchedulerError::Push(
                        PushError::Full(_)
                        | PushError::Store { .. }
                        | PushError::Unconfirmed { .. },
                    )),
                ) => {
                    #[cfg(feature = "tracing")]
                    tracing::warn!(
                        schedule = self.schedule.name(),
                        error = ?error,
                        "leaseq: a schedule step failed; trying again"
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
