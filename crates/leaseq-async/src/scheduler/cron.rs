//! Cron expressions in a time zone, as a [`Calendar`] (feature `cron`): the tick
//! arithmetic, daylight saving and leap days are `croner`'s and `chrono-tz`'s, not ours.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;
use leaseq_core::schedule::Calendar;
use leaseq_core::Timestamp;

/// A cron expression evaluated in a time zone (`croner`'s syntax: five fields, or six with
/// seconds first; `L`, `#`, `W`, names of days and months), as a [`Calendar`] for a
/// [`Schedule`](leaseq_core::schedule::Schedule).
///
/// Across a daylight-saving change, ticks follow `croner`'s forward search: a local time
/// skipped in spring runs at the first instant after the gap (02:30 in Berlin on the last
/// Sunday of March runs at 03:00 CEST), and a local time repeated in autumn runs once, at
/// its first occurrence (every tick whose local time falls in the repeated hour runs in its
/// first pass only). Ticks are whole seconds.
///
/// ```
/// use leaseq_async::core::schedule::Calendar;
/// use leaseq_async::{CronCalendar, Timestamp};
///
/// // 09:00 on weekdays in Berlin.
/// let cal = CronCalendar::new("0 9 * * MON-FRI", "Europe/Berlin").unwrap();
/// // 2024-01-01T00:00:00Z (a Monday): the next tick is 08:00 UTC (CET is UTC+1).
/// let t = Timestamp::from_nanos(1_704_067_200 * 1_000_000_000);
/// let next = cal.next_after(t).unwrap();
/// assert_eq!(next.as_nanos(), (1_704_067_200 + 8 * 3600) * 1_000_000_000);
/// // What operators see of it beside the schedule's stored state.
/// assert_eq!(cal.describe().as_deref(), Some(r#"cron "0 9 * * MON-FRI" in Europe/Berlin"#));
/// ```
#[derive(Clone)]
pub struct CronCalendar {
    cron: Cron,
    tz: Tz,
    /// The expression as given (croner keeps a normalized one).
    pattern: String,
}

/// Why a [`CronCalendar`] was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CronError {
    /// The expression does not parse; `croner`'s message says where.
    Pattern {
        /// The expression given.
        pattern: String,
        /// `croner`'s error.
        error: String,
    },
    /// The time zone is not an IANA name `chrono-tz` knows (such as `Europe/Berlin`, `UTC`).
    TimeZone(String),
}

impl fmt::Display for CronError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CronError::Pattern { pattern, error } => {
                write!(f, "cron expression {pattern:?} does not parse: {error}")
            }
            CronError::TimeZone(tz) => write!(
                f,
                "unknown time zone {tz:?}: use an IANA name such as \"Europe/Berlin\" or \"UTC\""
            ),
        }
    }
}

impl std::error::Error for CronError {}

impl CronCalendar {
    /// `pattern` evaluated in the IANA time zone `tz` (`"UTC"`, `"America/New_York"`, ...).
    pub fn new(pattern: &str, tz: &str) -> Result<Self, CronError> {
        let tz = Tz::from_str(tz).map_err(|_| CronError::TimeZone(tz.to_owned()))?;
        Self::with_tz(pattern, tz)
    }

    /// `pattern` evaluated in `tz`.
    pub fn with_tz(pattern: &str, tz: Tz) -> Result<Self, CronError> {
        let cron = Cron::from_str(pattern).map_err(|e| CronError::Pattern {
            pattern: pattern.to_owned(),
            error: e.to_string(),
        })?;
        Ok(CronCalendar {
            cron,
            tz,
            pattern: pattern.to_owned(),
        })
    }

    /// The time zone.
    pub fn tz(&self) -> Tz {
        self.tz
    }

    /// `t` in the calendar's zone, cut to the whole second (ticks are whole seconds, and
    /// `croner` keeps a fraction it is given), if chrono can represent it.
    fn local(&self, t: Timestamp) -> Option<DateTime<Tz>> {
        let secs = i64::try_from(t.as_nanos() / 1_000_000_000).ok()?;
        Some(Utc.timestamp_opt(secs, 0).single()?.with_timezone(&self.tz))
    }
}

/// Rounds of [`CronCalendar::next_after`]'s search before it gives up (no tick).
const MAX_ROUNDS: usize = 10_000;

/// An instant back on the wall clock, if it is after the epoch and fits.
fn stamp(t: &DateTime<Tz>) -> Option<Timestamp> {
    let nanos = t.timestamp_nanos_opt()?;
    u64::try_from(nanos).ok().map(Timestamp::from_nanos)
}

impl Calendar for CronCalendar {
    /// `croner` searches in local time and maps a repeated local time to its first
    /// instant, so from the second pass of an autumn hour its answer can be in the past;
    /// the search then goes on from that answer (one local tick further each round) until
    /// an instant after `t`: the repeated hour's ticks are not run twice.
    fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        let mut from = self.local(t)?;
        // At most one round per tick in a repeated hour (3,600 for every second).
        for _ in 0..MAX_ROUNDS {
            let next = self.cron.find_next_occurrence(&from, false).ok()?;
            let at = stamp(&next)?;
            if at > t {
                return Some(at);
            }
            from = next;
        }
        None
    }

    /// The ticks are `next_after`'s: `croner`'s backward search disagrees with its forward
    /// one in a spring gap (it answers the second before the gap where the forward search
    /// runs the skipped time after it), and two answers would give one tick two keys. So
    /// the backward answer is only a hint, from which the forward ticks are walked to `t`.
    fn last_at_or_before(&self, t: Timestamp) -> Option<Timestamp> {
        let mut bound = t;
        // A hint that is no forward tick (a spring gap) sends the search before it; gaps
        // do not follow each other, so a few rounds are plenty.
        for _ in 0..4 {
            let hint = self
                .cron
                .find_previous_occurrence(&self.local(bound)?, true);
            let hint = stamp(&hint.ok()?)?;
            let mut last = None;
            let mut next = self.next_after(Timestamp::from_nanos(hint.as_nanos().checked_sub(1)?));
            while let Some(n) = next.filter(|&n| n <= t) {
                last = Some(n);
                next = self.next_after(n);
            }
            if last.is_some() {
                return last;
            }
            bound = hint.saturating_sub(std::time::Duration::from_secs(1));
        }
        None
    }

    /// `cron "0 9 * * MON-FRI" in Europe/Berlin`.
    fn describe(&self) -> Option<String> {
        Some(format!("cron {:?} in {}", self.pattern, self.tz))
    }
}

impl fmt::Debug for CronCalendar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CronCalendar")
            .field("pattern", &self.pattern)
            .field("tz", &self.tz)
            .finish()
    }
}
