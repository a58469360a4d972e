//! `schedules`: the schedules a queue keeps in its store (each one's last tick pushed, next
//! tick, when its cursor last moved, its calendar in words), as a table or JSON.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leaseq_async::{ScheduleState, Timestamp};
use serde_json::{json, Value};

use crate::show::{relative, unix_ms};

/// A schedule's time (wall-clock nanoseconds) as a `SystemTime`.
fn time(t: Timestamp) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(t.as_nanos())
}

/// Schedules as a table, one row each, times relative to now.
pub(crate) fn schedules_table(states: &[ScheduleState]) -> String {
    if states.is_empty() {
        return "no schedules\n".into();
    }
    let now = SystemTime::now();
    let width = states
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(8);
    let mut out = format!(
        "{:<width$}  {:<12}  {:<12}  {:<12}  calendar\n",
        "schedule", "last tick", "next tick", "moved"
    );
    for s in states {
        let at =
            |t: Option<Timestamp>, none: &str| t.map_or(none.into(), |t| relative(time(t), now));
        out.push_str(&format!(
            "{:<width$}  {:<12}  {:<12}  {:<12}  {}\n",
            s.name,
            at(s.last_tick, "-"),
            at(s.next_tick, "never"),
            relative(time(s.moved_at), now),
            s.calendar.as_deref().unwrap_or("-"),
        ));
    }
    out
}

/// Schedules as JSON, an array; times in milliseconds since the Unix epoch.
pub(crate) fn schedules_json(states: &[ScheduleState]) -> Value {
    Value::Array(
        states
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "cursor_ms": unix_ms(time(s.cursor)),
                    "last_tick_ms": s.last_tick.map(|t| unix_ms(time(t))),
                    "next_tick_ms": s.next_tick.map(|t| unix_ms(time(t))),
                    "moved_at_ms": unix_ms(time(s.moved_at)),
                    "calendar": s.calendar,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_shows_its_ticks_and_calendar() {
        let secs = |s: u64| Timestamp::from_nanos(s * 1_000_000_000);
        let mut s = ScheduleState::new("rollup", secs(1_700_000_060), secs(1_700_000_058));
        s.last_tick = Some(secs(1_700_000_060));
        s.next_tick = Some(secs(1_700_000_120));
        s.calendar = Some("every 60s".into());
        let table = schedules_table(std::slice::from_ref(&s));
        assert!(table.starts_with("schedule  last tick"), "{table}");
        assert!(
            table.contains("rollup") && table.contains("every 60s"),
            "{table}"
        );
        let json = schedules_json(&[s]);
        assert_eq!(json[0]["name"], "rollup");
        assert_eq!(json[0]["next_tick_ms"], 1_700_000_120_000i64);
        assert_eq!(json[0]["calendar"], "every 60s");
        assert_eq!(schedules_table(&[]), "no schedules\n");
    }
}
