//! Ticks pushed ahead that the catch-up policy no longer runs: after an outage, the ticks a
//! schedule pushed within its lead (delayed until their time) came due while nothing ran,
//! and would run late, all at once. They are missed ticks like those the plan finds after
//! the cursor, so the same [`CatchUp`] decides which of them may still run. A pure
//! function of its inputs, as the plan is.

use alloc::vec::Vec;

use super::calendar::Calendar;
use super::plan::{prev, CatchUp};
use crate::time::Timestamp;

/// The ticks in `(since, min(cursor, now)]` that `catch_up` would not run at `now`, oldest
/// first, at most `max` (the latest ones). See
/// [`Schedule::stale`](super::Schedule::stale).
pub(super) fn stale<C: Calendar + ?Sized>(
    cal: &C,
    catch_up: CatchUp,
    since: Timestamp,
    cursor: Timestamp,
    now: Timestamp,
    max: usize,
) -> Vec<Timestamp> {
    let top = cursor.min(now);
    // The latest tick pushed ahead that is due now.
    let Some(last) = cal
        .last_at_or_before(top)
        .filter(|&l| l <= top && l > since)
    else {
        return Vec::new();
    };
    // The latest tick due, pushed ahead or not.
    let latest = cal.last_at_or_before(now).filter(|&l| l <= now);
    // How many of the due ticks pushed ahead may run: the latest ones.
    let keep: u64 = match catch_up {
        CatchUp::Skip { grace } => {
            u64::from(latest == Some(last) && now.saturating_duration_since(last) <= grace)
        }
        CatchUp::Once => u64::from(latest == Some(last)),
        CatchUp::All { limit } => {
            // The missed ticks after the cursor come first: the plan runs them.
            let mut missed = 0u64;
            let mut t = latest.filter(|&l| l > cursor);
            while let Some(tick) = t {
                missed += 1;
                if missed >= u64::from(limit.get()) {
                    break;
                }
                t = prev(cal, tick).filter(|&p| p > cursor);
            }
            u64::from(limit.get()).saturating_sub(missed)
        }
    };
    let mut out = Vec::new();
    let mut t = Some(last);
    let mut kept = 0;
    while let Some(tick) = t {
        if kept < keep {
            kept += 1;
        } else {
            if out.len() >= max {
                break;
            }
            out.push(tick);
        }
        t = prev(cal, tick).filter(|&p| p > since);
    }
    out.reverse();
    out
}
