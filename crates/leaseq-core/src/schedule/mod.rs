//! Periodic jobs, the policy: when a schedule ticks, which ticks to push after a gap, and
//! the unique key that makes a tick land once however many processes push it.
//!
//! A [`Schedule`] is a name, a [`Calendar`] (an [`Interval`], or calendar ticks computed
//! outside the core, e.g. from a cron expression in a time zone) and two policies:
//! [`CatchUp`] for missed ticks, and a *lead*, how long before its time a tick is pushed
//! (with a delay until its time). [`Schedule::plan`] is a pure function of the last tick
//! handled (the *cursor*) and `now`: it returns the ticks to push, those skipped, the new
//! cursor and when to plan again. The driver (leaseq-async's scheduler, or your own) keeps
//! the cursor (leaseq's scheduler: in the queue's store, see below), sleeps until
//! [`Plan::wake_at`] and pushes each tick with [`Schedule::key`] as its unique key.
//!
//! # Time
//!
//! Unlike a [`Queue`](crate::Queue)'s monotonic `now`, a schedule's times are **wall-clock**
//! [`Timestamp`]s, nanoseconds since the UNIX epoch: processes name a tick by its instant,
//! so they must share the epoch.
//!
//! # Once per tick, across processes
//!
//! The driver keeps the cursor where every process sharing the schedule reads it (leaseq's
//! scheduler keeps it in the queue's store) and moves it with a compare-and-set, in the same
//! commit as the pushes of the ticks it planned: a process that planned from a cursor
//! another one has moved since is refused, pushes nothing, reads the new cursor and plans
//! again. Each tick after the cursor is then pushed by exactly one process, and the cursor
//! survives every process: ticks missed while all were down are missed ticks at the next
//! plan (see below).
//!
//! A tick's key is the schedule's name and the tick's time (`name@<20-digit nanoseconds>`),
//! a second guard: while one push of a tick is ready, delayed or in flight, another is
//! refused as a duplicate key. A key is free again once its item is acked, so without a
//! shared cursor (a driver of your own that keeps it in the process), the guarantee needs
//! every process to push a tick *before* the first push of it is acked: a lead above the
//! clock skew between processes plus their planning latency gives that (every running
//! process pushes the tick during the `L` before its time, while the first push still waits
//! and holds the key). With a shared cursor the lead only makes ticks punctual: a tick is in
//! the queue, delayed, before its time, whenever the driver wakes.
//!
//! # Missed ticks
//!
//! A tick is *missed* when it is due (at or before `now`) and after the cursor: nothing
//! pushed it ahead of time (every process was down, or the driver was late). [`CatchUp`]
//! decides: [`Skip`](CatchUp::Skip) (only the latest, within a grace),
//! [`Once`](CatchUp::Once) (only the latest) or [`All`](CatchUp::All) (every one, up to a
//! bound). Skipped ticks are reported in [`Plan::skipped`] and never pushed later. A plan
//! costs O(ticks returned) calendar lookups, plus O(`limit`) with [`CatchUp::All`],
//! however long the gap: a year-long gap on a one-second interval is as cheap as a minute's.
//! A new schedule starts its cursor at the time it is set up (no tick before it runs), or
//! earlier to backfill a window.
//!
//! Ticks pushed ahead (within the lead) that came due while nothing ran are missed ticks
//! too: the last process pushed them, delayed, and then every process stopped. Left alone
//! they would all run at the restart, late and at once. [`Schedule::stale`] names those the
//! same [`CatchUp`] would not run (with `Once`, all but the latest tick due; with `Skip`,
//! all but the latest and only within the grace; with `All`, those beyond the `limit`
//! latest ticks due, counting the missed ones after the cursor first): the driver takes
//! them back if they are still waiting (leaseq's scheduler dead-letters them as
//! [`Reason::Expired`](crate::Reason::Expired) in the commit that moves the cursor), so an
//! outage costs one late run with `Once`, never a burst. A tick whose job has started is
//! left to run.
//!
//! # A clock that steps backwards
//!
//! The cursor never moves back: [`Plan::cursor`] is at least the cursor planned from. So a
//! tick at or before the cursor is **never pushed again** by this cursor's owner, whatever
//! `now` says. If the wall clock steps back (NTP, a VM restored), ticks between the new
//! `now` and the cursor are taken as already run: nothing is due until the clock passes the
//! cursor again, and the next tick comes when the clock reaches it (later in real time by
//! the step). A clock stepping forward is a gap: its ticks are missed, and [`CatchUp`]
//! decides.
//!
//! ```
//! use core::time::Duration;
//! use leaseq_core::schedule::{CatchUp, Interval, Schedule};
//! use leaseq_core::Timestamp;
//!
//! let minute = Duration::from_secs(60);
//! let s = Schedule::new("rollup", Interval::new(minute, Timestamp::ZERO).unwrap())
//!     .unwrap()
//!     .with_catch_up(CatchUp::Once)
//!     .with_lead(Duration::from_secs(5));
//! let at = |secs: u64| Timestamp::from_duration(Duration::from_secs(secs));
//!
//! // Set up at 10:00:30 (in seconds since the epoch): nothing before it runs.
//! let plan = s.plan(at(36_030), at(36_030));
//! assert!(plan.ticks.is_empty());
//! assert_eq!(plan.wake_at, at(36_055)); // 5 s before the 10:01 tick
//!
//! // At 10:00:55 the 10:01 tick is pushed ahead, with a 5 s delay.
//! let plan = s.plan(plan.cursor, at(36_055));
//! assert_eq!(plan.ticks, [at(36_060)]);
//! assert_eq!(s.key(at(36_060)).as_bytes(), b"rollup@00000036060000000000");
//!
//! // Down until 10:07:30: 10:02 .. 10:07 were missed; `Once` runs 10:07 and skips the rest.
//! let plan = s.plan(plan.cursor, at(36_450));
//! assert_eq!(plan.ticks, [at(36_420)]);
//! let skipped = plan.skipped.unwrap();
//! assert_eq!((skipped.first, skipped.last), (at(36_120), at(36_360)));
//! ```

mod calendar;
mod error;
mod key;
mod plan;
mod stale;

use alloc::vec::Vec;
use core::time::Duration;

pub use calendar::{Calendar, Interval};
pub use error::ScheduleError;
pub use plan::{CatchUp, Plan, Skipped};

use crate::key::UniqueKey;
use crate::time::Timestamp;

/// A named schedule: its [`Calendar`], its [`CatchUp`] policy and its lead. See the
/// [module docs](self).
#[derive(Clone, Debug)]
pub struct Schedule<C> {
    /// The name's bytes (a `&str`'s), at most `MAX_NAME_LEN`.
    name: UniqueKey,
    calendar: C,
    catch_up: CatchUp,
    lead: Duration,
}

impl<C> Schedule<C> {
    /// The longest name, in bytes: a tick key is the name, `@` and 20 digits, in at most
    /// [`UniqueKey::MAX_LEN`] bytes.
    pub const MAX_NAME_LEN: usize = UniqueKey::MAX_LEN - 1 - key::TIME_DIGITS;

    /// The most ticks one [`plan`](Self::plan) returns; a plan that stops there has
    /// [`Plan::wake_at`] at `now`, to be called again at once.
    pub const MAX_BATCH: usize = 1024;

    /// A schedule named `name` (unique among the schedules sharing a queue) on `calendar`,
    /// with [`CatchUp::Once`] and no lead. Refused with [`ScheduleError::EmptyName`] or
    /// [`ScheduleError::NameTooLong`] (over [`MAX_NAME_LEN`](Self::MAX_NAME_LEN) bytes).
    pub fn new(name: &str, calendar: C) -> Result<Self, ScheduleError> {
        if name.is_empty() {
            return Err(ScheduleError::EmptyName);
        }
        if name.len() > Self::MAX_NAME_LEN {
            return Err(ScheduleError::NameTooLong { len: name.len() });
        }
        let name = UniqueKey::new(name).ok_or(ScheduleError::NameTooLong { len: name.len() })?;
        Ok(Schedule {
            name,
            calendar,
            catch_up: CatchUp::default(),
            lead: Duration::ZERO,
        })
    }

    /// Sets the policy for missed ticks.
    pub fn with_catch_up(mut self, catch_up: CatchUp) -> Self {
        self.catch_up = catch_up;
        self
    }

    /// Pushes each tick `lead` before its time, with a delay until its time (see "Once per
    /// tick, across processes" in the [module docs](self)).
    pub fn with_lead(mut self, lead: Duration) -> Self {
        self.lead = lead;
        self
    }

    /// The name.
    pub fn name(&self) -> &str {
        // Made from a `&str`: always UTF-8.
        core::str::from_utf8(self.name.as_bytes()).unwrap_or_default()
    }

    /// The calendar.
    pub fn calendar(&self) -> &C {
        &self.calendar
    }

    /// The policy for missed ticks.
    pub fn catch_up(&self) -> CatchUp {
        self.catch_up
    }

    /// How long before its time a tick is pushed.
    pub fn lead(&self) -> Duration {
        self.lead
    }

    /// The unique key of the tick at `at`: `name@` and `at` in nanoseconds, 20 digits,
    /// zero-padded (so one schedule's keys sort by time).
    pub fn key(&self, at: Timestamp) -> UniqueKey {
        key::tick_key(self.name.as_bytes(), at)
    }

    /// The tick time in `key`, if `key` is one of this schedule's tick keys.
    pub fn tick_of(&self, key: &UniqueKey) -> Option<Timestamp> {
        key::tick_of(self.name.as_bytes(), key)
    }
}

impl<C: Calendar> Schedule<C> {
    /// What to push at `now`, given `cursor`, the latest tick already pushed or skipped (for
    /// a new schedule: when it was set up). Pure: the same arguments give the same plan.
    /// See [`Plan`] for what to do with it, and the [module docs](self) for missed ticks and
    /// clocks that step backwards.
    pub fn plan(&self, cursor: Timestamp, now: Timestamp) -> Plan {
        plan::plan(
            &self.calendar,
            self.catch_up,
            self.lead,
            cursor,
            now,
            Self::MAX_BATCH,
        )
    }

    /// The first tick strictly after `t` (`None`: the calendar has no further tick, or
    /// answered one that is not after `t`): after a plan's cursor, the next tick to push.
    pub fn next_tick(&self, t: Timestamp) -> Option<Timestamp> {
        plan::next(&self.calendar, t)
    }

    /// The ticks pushed ahead that this schedule's [`CatchUp`] would no longer run at
    /// `now`: of the ticks in `(since, min(cursor, now)]` (pushed ahead by the plan whose
    /// cursor is `cursor`, made at `since`, and come due since), all but those the policy
    /// runs, oldest first, at most [`MAX_BATCH`](Self::MAX_BATCH) (the latest ones). See
    /// "Missed ticks" in the [module docs](self). Pure; empty in steady running, when the
    /// only tick come due since the last plan is the latest one.
    ///
    /// ```
    /// use core::time::Duration;
    /// use leaseq_core::schedule::{CatchUp, Interval, Schedule};
    /// use leaseq_core::Timestamp;
    ///
    /// let s = |catch_up| {
    ///     Schedule::new("sync", Interval::new(Duration::from_secs(1), Timestamp::ZERO).unwrap())
    ///         .unwrap()
    ///         .with_lead(Duration::from_secs(5))
    ///         .with_catch_up(catch_up)
    /// };
    /// let at = |secs: u64| Timestamp::from_duration(Duration::from_secs(secs));
    /// // At 100 s the plan pushed 101..=105 ahead (cursor 105); every process stopped, and
    /// // at 103.5 s one is back: 101, 102 and 103 came due meanwhile.
    /// let now = Timestamp::from_nanos(103_500_000_000);
    /// assert_eq!(s(CatchUp::Once).stale(at(100), at(105), now), [at(101), at(102)]);
    /// let grace = Duration::from_millis(100);
    /// assert_eq!(
    ///     s(CatchUp::Skip { grace }).stale(at(100), at(105), now),
    ///     [at(101), at(102), at(103)]
    /// );
    /// ```
    pub fn stale(&self, since: Timestamp, cursor: Timestamp, now: Timestamp) -> Vec<Timestamp> {
        stale::stale(
            &self.calendar,
            self.catch_up,
            since,
            cursor,
            now,
            Self::MAX_BATCH,
        )
    }
}
