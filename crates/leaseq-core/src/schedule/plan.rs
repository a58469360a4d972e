//! The missed-ticks policy and the plan: which ticks to push, given the last tick handled
//! and the time now. A pure function of its inputs; no clock, no state.

use alloc::vec::Vec;
use core::num::NonZeroU32;
use core::time::Duration;

use super::calendar::Calendar;
use crate::time::Timestamp;

/// What to do with ticks that fell due while nothing ran the schedule (every process down,
/// or the driver late): the ticks in `(cursor, now]` that were not pushed ahead of time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CatchUp {
    /// Run none of them, except the latest if it is at most `grace` old (a driver that woke
    /// a little late still runs its tick). For jobs that are pointless late ("send the 9:00
    /// digest").
    Skip {
        /// How late the latest tick may still run.
        grace: Duration,
    },
    /// Run the latest once, however old, and skip the others: one late run per outage,
    /// never a burst. The default. For jobs where one run covers the gap ("clean up expired
    /// sessions").
    #[default]
    Once,
    /// Run every missed tick, oldest first, but at most the `limit` latest; older ones are
    /// skipped. For jobs that must see each period ("roll up each hour's metrics").
    All {
        /// The most missed ticks run after one outage.
        limit: NonZeroU32,
    },
}

/// The missed ticks a plan did not push: every tick from `first` to `last`, both included.
/// Each was due and is now behind the cursor: none of them will ever be pushed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// The earliest tick skipped.
    pub first: Timestamp,
    /// The latest tick skipped.
    pub last: Timestamp,
}

/// What [`Schedule::plan`](super::Schedule::plan) decided: the ticks to push now, the
/// ticks skipped, the new cursor and when to plan again.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Plan {
    /// The ticks to push, oldest first, each after `cursor` and strictly increasing: missed
    /// ticks as [`CatchUp`] says (due now), then the ticks up to `now + lead` (pushed ahead,
    /// each with a delay until its time). Push each with
    /// [`Schedule::key`](super::Schedule::key) as its unique key. At most
    /// [`Schedule::MAX_BATCH`](super::Schedule::MAX_BATCH).
    pub ticks: Vec<Timestamp>,
    /// Missed ticks that will never be pushed, if any.
    pub skipped: Option<Skipped>,
    /// The new cursor: the latest tick pushed or skipped, never earlier than the cursor
    /// planned from. Keep it for the next plan (after the pushes succeeded, or were refused
    /// as duplicates).
    pub cursor: Timestamp,
    /// When to plan again: the next tick's time minus the lead, or `now` itself when this
    /// plan stopped at [`MAX_BATCH`](super::Schedule::MAX_BATCH) ticks, or
    /// [`Timestamp::MAX`] when the calendar has no further tick.
    pub wake_at: Timestamp,
}

/// The first tick after `t`, if the calendar's answer is after `t`.
pub(super) fn next<C: Calendar + ?Sized>(cal: &C, t: Timestamp) -> Option<Timestamp> {
    cal.next_after(t).filter(|&n| n > t)
}

/// The last tick strictly before `t`, if the calendar's answer is before `t`.
pub(super) fn prev<C: Calendar + ?Sized>(cal: &C, t: Timestamp) -> Option<Timestamp> {
    let before = t.as_nanos().checked_sub(1)?;
    cal.last_at_or_before(Timestamp::from_nanos(before))
        .filter(|&p| p < t)
}

/// The plan for the ticks after `cursor`, at `now`. See [`Plan`] and the module docs.
pub(super) fn plan<C: Calendar + ?Sized>(
    cal: &C,
    catch_up: CatchUp,
    lead: Duration,
    mut cursor: Timestamp,
    now: Timestamp,
    max_batch: usize,
) -> Plan {
    let mut ticks = Vec::new();
    let mut skipped = None;
    // Missed: the ticks in (cursor, now]. None when the clock is behind the cursor.
    let latest = cal
        .last_at_or_before(now)
        .filter(|&l| l <= now && l > cursor);
    let mut full = false;
    if let Some(latest) = latest {
        // The oldest tick this plan runs; the ticks in (cursor, oldest) are skipped.
        let oldest = match catch_up {
            CatchUp::Skip { grace } if now.saturating_duration_since(latest) > grace => None,
            CatchUp::Skip { .. } | CatchUp::Once => Some(latest),
            CatchUp::All { limit } => {
                let mut oldest = latest;
                for _ in 1..limit.get() {
                    match prev(cal, oldest) {
                        Some(p) if p > cursor => oldest = p,
                        _ => break,
                    }
                }
                Some(oldest)
            }
        };
        let last_skipped = match oldest {
            Some(oldest) => prev(cal, oldest),
            None => Some(latest),
        };
        if let Some(last) = last_skipped.filter(|&l| l > cursor) {
            let first = next(cal, cursor).filter(|&f| f <= last).unwrap_or(last);
            skipped = Some(Skipped { first, last });
        }
        cursor = latest;
        if let Some(mut t) = oldest {
            loop {
                ticks.push(t);
                if t == latest {
                    break;
                }
                if ticks.len() >= max_batch {
                    // The rest next time, from here.
                    cursor = t;
                    full = true;
                    break;
                }
                match next(cal, t) {
                    Some(n) if n <= latest => t = n,
                    _ => break,
                }
            }
        }
    }
    // Ahead: the ticks in (cursor, now + lead], pushed now with a delay.
    let horizon = now.saturating_add(lead);
    let mut upcoming = if full { None } else { next(cal, cursor) };
    while let Some(t) = upcoming.filter(|&t| t <= horizon) {
        if ticks.len() >= max_batch {
            full = true;
            break;
        }
        ticks.push(t);
        cursor = t;
        upcoming = next(cal, t);
    }
    let wake_at = if full {
        now
    } else {
        upcoming.map_or(Timestamp::MAX, |t| t.saturating_sub(lead))
    };
    Plan {
        ticks,
        skipped,
        cursor,
        wake_at,
    }
}
