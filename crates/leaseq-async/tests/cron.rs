//! Cron calendars (feature `cron`): daylight-saving changes and leap days are computed by
//! `croner` and `chrono-tz`; the schedule policy on top of them stays the core's.

use leaseq_async::core::schedule::{Calendar, CatchUp, Schedule};
use leaseq_async::{CronCalendar, CronError, Timestamp};

fn at(unix_secs: u64) -> Timestamp {
    Timestamp::from_nanos(unix_secs * 1_000_000_000)
}

fn secs(t: Timestamp) -> u64 {
    t.as_nanos() / 1_000_000_000
}

/// Every tick after `from` up to `to`, by `next_after`.
fn ticks(cal: &CronCalendar, from: u64, to: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut t = at(from);
    while let Some(n) = cal.next_after(t).filter(|&n| n <= at(to)) {
        out.push(secs(n));
        t = n;
    }
    out
}

/// `last_at_or_before` agrees with the forward ticks at every second of a window, so that
/// every process names each tick with one instant (one key).
fn assert_consistent(cal: &CronCalendar, from: u64, to: u64, step: u64) {
    let all = ticks(cal, from - 3 * 86_400, to);
    for t in (from..to).step_by(step as usize) {
        let expected = all.iter().copied().filter(|&x| x <= t).max();
        assert_eq!(cal.last_at_or_before(at(t)).map(secs), expected, "at {t}");
        // A fraction of a second changes nothing: ticks are whole seconds.
        let frac = Timestamp::from_nanos(t * 1_000_000_000 + 500_000_000);
        assert_eq!(cal.last_at_or_before(frac).map(secs), expected, "at {t}.5");
        let next = all.iter().copied().find(|&x| x > t);
        if next.is_some() {
            assert_eq!(cal.next_after(frac).map(secs), next, "after {t}.5");
        }
    }
}

const SPRING_2024: u64 = 1_711_756_800; // 2024-03-30T00:00Z; Berlin springs forward on the 31st
const FALL_2024: u64 = 1_729_900_000; // 2024-10-26, before Berlin falls back on the 27th

/// 02:30 does not exist in Berlin on 2024-03-31: it runs at 03:00 CEST (01:00Z), between
/// 02:30 CET the day before and 02:30 CEST the day after; the backward lookup agrees.
#[test]
fn a_time_skipped_in_spring_runs_after_the_gap() {
    let cal = CronCalendar::new("30 2 * * *", "Europe/Berlin").unwrap();
    let days = ticks(&cal, SPRING_2024, SPRING_2024 + 3 * 86_400);
    assert_eq!(days, [1_711_762_200, 1_711_846_800, 1_711_931_400]);
    assert_consistent(&cal, 1_711_843_200, 1_711_850_400, 29);
}

/// 02:30 happens twice in Berlin on 2024-10-27 (00:30Z in CEST, 01:30Z in CET): it runs once,
/// at the first.
#[test]
fn a_time_repeated_in_autumn_runs_once() {
    let cal = CronCalendar::new("30 2 * * *", "Europe/Berlin").unwrap();
    let days = ticks(&cal, FALL_2024, FALL_2024 + 3 * 86_400);
    assert_eq!(days, [1_729_902_600, 1_729_989_000, 1_730_079_000]);
    assert_consistent(&cal, 1_729_987_200, 1_729_994_400, 29);
    // Every 15 minutes through the repeated hour: local times repeat, instants do not.
    let quarter = CronCalendar::new("*/15 * * * *", "Europe/Berlin").unwrap();
    let q = ticks(&quarter, 1_729_987_200, 1_729_994_400);
    assert!(q.windows(2).all(|w| w[0] < w[1]), "{q:?}");
    assert_consistent(&quarter, 1_729_987_200, 1_729_994_400, 61);
}

/// February 29th at noon UTC: 2024, then 2028; nothing in the years between.
#[test]
fn a_leap_day_schedule_skips_common_years() {
    let cal = CronCalendar::new("0 12 29 2 *", "UTC").unwrap();
    let from = 1_672_531_200; // 2023-01-01
    assert_eq!(
        ticks(&cal, from, 1_835_438_400),
        [1_709_208_000, 1_835_438_400]
    );
    assert_eq!(
        cal.last_at_or_before(at(1_835_438_399)).map(secs),
        Some(1_709_208_000)
    );
}

/// The core's plan over a gap across the spring change: `All` runs every missed tick, once,
/// each with its own key; `Once` runs the latest.
#[test]
fn the_core_policy_runs_on_cron_ticks_across_a_dst_change() {
    let cal = CronCalendar::new("0 * * * *", "Europe/Berlin").unwrap();
    let (cursor, now) = (at(1_711_843_200), at(1_711_843_200 + 5 * 3600)); // 00:00Z .. 05:00Z
    let all = Schedule::new("hourly", cal.clone())
        .unwrap()
        .with_catch_up(CatchUp::All {
            limit: 100.try_into().unwrap(),
        });
    let plan = all.plan(cursor, now);
    let hours: Vec<u64> = plan.ticks.iter().map(|&t| secs(t)).collect();
    // Five UTC hours, five ticks: local 02:00 does not exist, 03:00 CEST is 01:00Z.
    assert_eq!(
        hours,
        (1..=5)
            .map(|h| 1_711_843_200 + h * 3600)
            .collect::<Vec<_>>()
    );
    let keys: std::collections::BTreeSet<_> = plan.ticks.iter().map(|&t| all.key(t)).collect();
    assert_eq!(keys.len(), 5);
    let once = Schedule::new("hourly", cal).unwrap().plan(cursor, now);
    assert_eq!(once.ticks, [now]);
}

#[test]
fn bad_expressions_and_zones_are_refused() {
    assert!(matches!(
        CronCalendar::new("61 * * * *", "UTC"),
        Err(CronError::Pattern { .. })
    ));
    let err = CronCalendar::new("0 * * * *", "Mars/Olympus").unwrap_err();
    assert_eq!(err, CronError::TimeZone("Mars/Olympus".into()));
    assert!(err.to_string().contains("IANA"));
}
