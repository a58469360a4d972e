//! Periodic jobs, the policy: when a schedule ticks, which ticks to push after a gap, and
//! the unique key that makes a tick land once however many processes push it.
//!
//! A [`Schedule`] is a name, a [`Calendar`] (an [`Interval`], or calendar ticks computed
//! outside the core, e.g. from a cron expression in a time zone) and two policies:
//! [`CatchUp`] for missed ticks, and a *lead*, how long before its time a tick is pushed
//! (with a delay until its time). [`Schedule::plan`] is a pure function of the last tick
//! handled (the *cursor*) and `now`: it returns the ticks to push, those skipped, the new
//! cursor and when to plan again. The driver (leaseq-async's scheduler, or your own) keeps
//! the cursor, sleeps until [`Plan::wake_at`] and pushes each tick with
//! [`Schedule::key`] as its unique key.
//!
//! # Time
//!
//! Unlike a [`Queue`](crate::Queue)'s monotonic `now`, a schedule's times are **wall-clock**
//! [`Timestamp`]s, nanoseconds since the UNIX epoch: processes name a tick by its instant,
//! so they must share the epoch.
//!
//! # Once per tick, across processes
//!
//! A tick's key is the schedule's name and the tick's time (`name@<20-digit nanoseconds>`).
//! While one process's push of a tick is ready, delayed or in flight, another's is refused
//! as a duplicate key: the tick lands once. A key is free again once its item is acked, so
//! the guarantee needs every process to push a tick *before* the first push of it is
//! acked. The lead gives that: with a lead of `L`, every running process pushes the tick
//! during the `L` before its time, while the first push still waits (delayed) and holds the
//! key. Choose `L` above the clock skew between processes plus their planning latency.
//! With no lead, a tick whose job finishes before a slower process plans may run twice.
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
}
