//! The schedule policy with explicit time: intervals against a tick table, the plan against
//! a brute-force model over random gaps, catch-up bounds, a clock that steps backwards,
//! year-long gaps, a misbehaving calendar, and three processes pushing one schedule into a
//! queue with unique keys (each tick lands once).

use std::time::Duration;

use leaseq_core::schedule::{Calendar, CatchUp, Interval, Plan, Schedule, ScheduleError, Skipped};
use leaseq_core::{Config, PushError, PushOptions, Queue, Timestamp};
use leaseq_test_kit::calendar::{all, calendar, Table};
use leaseq_test_kit::seeded::seed_config;
use leaseq_test_kit::time::{secs, ts};
use proptest::prelude::*;

/// The plan, computed the slow obvious way from every tick of the table.
fn model(ticks: &[u64], catch_up: CatchUp, lead: u64, cursor: u64, now: u64) -> Plan {
    let batch = Schedule::<Table>::MAX_BATCH;
    let missed: Vec<u64> = ticks
        .iter()
        .copied()
        .filter(|&t| t > cursor && t <= now)
        .collect();
    let run: &[u64] = match (catch_up, missed.last()) {
        (_, None) => &[],
        (CatchUp::Skip { grace }, Some(&last)) if Duration::from_nanos(now - last) > grace => &[],
        (CatchUp::All { limit }, Some(_)) => {
            &missed[missed.len().saturating_sub(limit.get() as usize)..]
        }
        (_, Some(_)) => &missed[missed.len() - 1..],
    };
    let skipped_n = missed.len() - run.len();
    let skipped = (skipped_n > 0).then(|| Skipped {
        first: ts(missed[0]),
        last: ts(missed[skipped_n - 1]),
    });
    let mut out: Vec<u64> = run.iter().copied().take(batch).collect();
    if run.len() > batch {
        return expect(out.clone(), skipped, *out.last().unwrap(), now);
    }
    let mut new_cursor = missed.last().copied().unwrap_or(cursor).max(cursor);
    let horizon = now.saturating_add(lead);
    let from = new_cursor;
    for &t in ticks.iter().filter(|&&t| t > from) {
        if t > horizon {
            return expect(out, skipped, new_cursor, t.saturating_sub(lead));
        }
        if out.len() == batch {
            return expect(out, skipped, new_cursor, now);
        }
        out.push(t);
        new_cursor = t;
    }
    expect(out, skipped, new_cursor, u64::MAX)
}

fn expect(ticks: Vec<u64>, skipped: Option<Skipped>, cursor: u64, wake: u64) -> Plan {
    // `Plan` is non_exhaustive: build the expectation through a real plan's fields.
    let mut p = Schedule::new("m", Table(vec![]))
        .unwrap()
        .plan(ts(cursor), ts(0));
    p.ticks = ticks.into_iter().map(ts).collect();
    p.skipped = skipped;
    p.cursor = ts(cursor);
    p.wake_at = ts(wake);
    p
}

proptest! {
    #![proptest_config(seed_config(2000, 0x5c4ed))]

    /// Every plan is the brute-force model's, for any cursor and `now` (before the cursor
    /// included: a clock that stepped back).
    #[test]
    fn plan_matches_the_model(
        (ticks, catch_up) in calendar(),
        lead in prop_oneof![Just(0u64), 0u64..60, Just(u64::MAX)],
        cursor in 0u64..1500,
        now in 0u64..1500,
    ) {
        let s = Schedule::new("m", Table(ticks.clone())).unwrap()
            .with_catch_up(catch_up)
            .with_lead(Duration::from_nanos(lead));
        prop_assert_eq!(s.plan(ts(cursor), ts(now)), model(&ticks, catch_up, lead, cursor, now));
    }

    /// An interval answers as the table of its ticks does.
    #[test]
    fn interval_is_its_table(every in 1u64..50, anchor in 0u64..100, t in 0u64..2000) {
        let i = Interval::new(Duration::from_nanos(every), ts(anchor)).unwrap();
        let table = Table((0..).map(|k| anchor + k * every).take_while(|&x| x < 4000).collect());
        prop_assert_eq!(i.next_after(ts(t)), table.next_after(ts(t)));
        prop_assert_eq!(i.last_at_or_before(ts(t)), table.last_at_or_before(ts(t)));
    }

    /// A driver carrying its cursor through random clock readings (forward jumps, backward
    /// steps): no tick is ever pushed twice, pushes go in time order, every tick up to the
    /// final cursor is pushed or reported skipped exactly once, nothing is pushed past
    /// `now + lead`, and only due ticks are skipped.
    #[test]
    fn a_driver_never_reruns_and_accounts_for_every_tick(
        (ticks, catch_up) in calendar(),
        lead in 0u64..30,
        start in 0u64..100,
        steps in prop::collection::vec(-200i64..300, 1..40),
    ) {
        let s = Schedule::new("d", Table(ticks.clone())).unwrap()
            .with_catch_up(catch_up)
            .with_lead(Duration::from_nanos(lead));
        let (mut cursor, mut now) = (ts(start), start);
        let mut pushed: Vec<u64> = Vec::new();
        let mut skipped: Vec<u64> = Vec::new();
        for step in steps {
            now = now.saturating_add_signed(step);
            let plan = s.plan(cursor, ts(now));
            prop_assert!(plan.cursor >= cursor);
            for &t in &plan.ticks {
                prop_assert!(t > cursor && t <= ts(now + lead));
                prop_assert!(pushed.last().is_none_or(|&p| p < t.as_nanos()), "twice or out of order");
                pushed.push(t.as_nanos());
            }
            if let Some(Skipped { first, last }) = plan.skipped {
                prop_assert!(last <= ts(now), "skipped a tick not yet due");
                skipped.extend(ticks.iter().filter(|&&t| ts(t) >= first && ts(t) <= last));
            }
            prop_assert!(plan.wake_at > ts(now) || plan.wake_at == ts(now) && plan.ticks.len() == Schedule::<Table>::MAX_BATCH);
            cursor = plan.cursor;
        }
        let mut seen = pushed.clone();
        seen.extend(&skipped);
        seen.sort_unstable();
        let expected: Vec<u64> = ticks.iter().copied().filter(|&t| t > start && ts(t) <= cursor).collect();
        prop_assert_eq!(seen, expected);
    }
}

#[test]
fn a_clock_stepping_back_reruns_nothing_and_waits_for_the_next_tick() {
    let minute = Interval::new(Duration::from_secs(60), Timestamp::ZERO).unwrap();
    let s = Schedule::new("m", minute).unwrap().with_catch_up(all(100));
    let plan = s.plan(secs(0), secs(600));
    assert_eq!(plan.ticks.len(), 10); // 1 min .. 10 min
    let cursor = plan.cursor;
    assert_eq!(cursor, secs(600));
    // The clock steps back 5 minutes: the ticks between are not run again.
    let back = s.plan(cursor, secs(300));
    assert!(back.ticks.is_empty() && back.skipped.is_none());
    assert_eq!((back.cursor, back.wake_at), (secs(600), secs(660)));
    // Back past the cursor: only the new tick.
    assert_eq!(s.plan(back.cursor, secs(661)).ticks, [secs(660)]);
}

#[test]
fn catch_up_bounds_over_a_gap() {
    let every = Interval::new(Duration::from_secs(1), Timestamp::ZERO).unwrap();
    let plan = |c: CatchUp, now: u64| {
        Schedule::new("g", every)
            .unwrap()
            .with_catch_up(c)
            .plan(secs(0), secs(now))
    };
    // 100 ticks missed (1 .. 100).
    let p = plan(all(10), 100);
    assert_eq!(p.ticks, (91..=100).map(secs).collect::<Vec<_>>());
    assert_eq!(
        p.skipped,
        Some(Skipped {
            first: secs(1),
            last: secs(90)
        })
    );
    let p = plan(CatchUp::Once, 100);
    assert_eq!(
        (p.ticks, p.skipped.unwrap().last),
        (vec![secs(100)], secs(99))
    );
    let grace = |s: u64| CatchUp::Skip {
        grace: Duration::from_secs(s),
    };
    // At 100.5 s the 100 s tick is 0.5 s old: within a 1 s grace, outside a zero one.
    let late = Timestamp::from_nanos(100_500_000_000);
    let sched = |c| Schedule::new("g", every).unwrap().with_catch_up(c);
    assert_eq!(sched(grace(1)).plan(secs(0), late).ticks, [secs(100)]);
    let p = sched(grace(0)).plan(secs(0), late);
    assert!(p.ticks.is_empty());
    assert_eq!(
        p.skipped,
        Some(Skipped {
            first: secs(1),
            last: secs(100)
        })
    );
    assert_eq!((p.cursor, p.wake_at), (secs(100), secs(101)));
    // A limit above the gap runs it all, skipping nothing.
    let p = plan(all(1000), 100);
    assert_eq!((p.ticks.len(), p.skipped), (100, None));
}

#[test]
fn a_year_long_gap_on_a_nanosecond_interval_is_cheap() {
    let every_ns = Interval::new(Duration::from_nanos(1), Timestamp::ZERO).unwrap();
    let year = 365 * 24 * 3600 * 1_000_000_000u64;
    let s = Schedule::new("y", every_ns).unwrap();
    let p = s.plan(ts(5), ts(year));
    assert_eq!(p.ticks, [ts(year)]);
    assert_eq!(
        p.skipped,
        Some(Skipped {
            first: ts(6),
            last: ts(year - 1)
        })
    );
    // With a bound: the bound's latest ticks only.
    let p = s.clone().with_catch_up(all(3)).plan(ts(5), ts(year));
    assert_eq!(p.ticks, [ts(year - 2), ts(year - 1), ts(year)]);
    // Near the end of time: no tick at `Timestamp::MAX`, and no overflow.
    let p = s.plan(ts(u64::MAX - 3), Timestamp::MAX);
    assert_eq!(
        (p.ticks, p.wake_at),
        (vec![ts(u64::MAX - 1)], Timestamp::MAX)
    );
}

#[test]
fn a_bound_above_the_batch_comes_in_batches_skipping_nothing_more() {
    let every = Interval::new(Duration::from_nanos(1), Timestamp::ZERO).unwrap();
    let s = Schedule::new("b", every).unwrap().with_catch_up(all(3000));
    let max = Schedule::<Interval>::MAX_BATCH;
    let now = ts(10_000);
    let first = s.plan(ts(0), now);
    assert_eq!(first.ticks.len(), max);
    assert_eq!(first.ticks[0], ts(7001));
    assert_eq!(
        first.skipped,
        Some(Skipped {
            first: ts(1),
            last: ts(7000)
        })
    );
    assert_eq!(first.wake_at, now);
    let mut all_ticks = first.ticks.clone();
    let mut cursor = first.cursor;
    loop {
        let p = s.plan(cursor, now);
        assert_eq!(p.skipped, None);
        all_ticks.extend(&p.ticks);
        cursor = p.cursor;
        if p.wake_at > now {
            break;
        }
    }
    assert_eq!(all_ticks, (7001..=10_000).map(ts).collect::<Vec<_>>());
}

/// A calendar that answers nonsense (a "next" not after `t`, a "last" after `t`) stops
/// the schedule instead of looping or going back.
#[test]
fn a_misbehaving_calendar_cannot_loop_or_rewind() {
    struct Liar;
    impl Calendar for Liar {
        fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
            Some(t)
        }
        fn last_at_or_before(&self, t: Timestamp) -> Option<Timestamp> {
            Some(t.saturating_add(Duration::from_nanos(1)))
        }
    }
    let s = Schedule::new("l", Liar)
        .unwrap()
        .with_catch_up(all(u32::MAX));
    let p = s.plan(ts(10), ts(20));
    assert!(p.ticks.is_empty());
    assert_eq!((p.cursor, p.wake_at), (ts(10), Timestamp::MAX));
}

#[test]
fn names_are_checked_and_keys_read_back() {
    let i = Interval::new(Duration::from_secs(1), Timestamp::ZERO).unwrap();
    assert_eq!(Schedule::new("", i).unwrap_err(), ScheduleError::EmptyName);
    let long = "x".repeat(44);
    assert_eq!(
        Schedule::new(&long, i).unwrap_err(),
        ScheduleError::NameTooLong { len: 44 }
    );
    let s = Schedule::new(&long[..43], i).unwrap();
    assert_eq!(s.name().len(), 43);
    let k = s.key(Timestamp::MAX);
    assert_eq!(s.tick_of(&k), Some(Timestamp::MAX));
    let other = Schedule::new("y", i).unwrap();
    assert_eq!(other.tick_of(&k), None);
    assert_ne!(s.key(secs(1)), other.key(secs(1)));
}

/// Three processes with clocks skewed by 0, 7 and 15 ms run one schedule (100 ticks, every
/// 100 ms) into one queue, pushing each tick with its key and a delay until its time; a
/// consumer acks each item as soon as it is visible. Returns the items that landed and the
/// pushes refused as duplicates.
fn three_processes(lead: Duration) -> (Vec<Timestamp>, usize) {
    let every = Duration::from_millis(100);
    let cal = Interval::new(every, Timestamp::ZERO).unwrap();
    let s = Schedule::new("three", cal).unwrap().with_lead(lead);
    let skews_ms = [0u64, 7, 15];
    let mut q: Queue<Timestamp> = Queue::new(Config::new(Duration::from_secs(1))).unwrap();
    let mut cursors = [ts(0); 3];
    let mut wakes = [ts(0); 3];
    let mut landed = Vec::new();
    let mut duplicates = 0;
    // The true time steps by 1 ms, to 20 ms past the last tick; each process plans when its
    // own clock reaches its wake.
    for ms in 0..=100 * 100 + 20 {
        let now = Timestamp::from_duration(Duration::from_millis(ms));
        for p in 0..3 {
            let mine = now.saturating_sub(Duration::from_millis(skews_ms[p]));
            if mine < wakes[p] {
                continue;
            }
            let plan = s.plan(cursors[p], mine);
            for &t in &plan.ticks {
                let o = PushOptions::new()
                    .key(s.key(t).as_bytes())
                    .delay(t.saturating_duration_since(mine));
                match q.push_with(t, now, o) {
                    Ok(_) => {}
                    Err(PushError::DuplicateKey { .. }) => duplicates += 1,
                    Err(e) => panic!("{e:?}"),
                }
            }
            cursors[p] = plan.cursor;
            wakes[p] = plan.wake_at;
        }
        while let Some(lease) = q.receive(now) {
            landed.push(lease.item);
            q.ack(lease.receipt, now).unwrap();
        }
    }
    (landed, duplicates)
}

/// With a lead above the skew every tick lands exactly once; the others' pushes are refused.
#[test]
fn three_processes_push_each_tick_once_with_a_lead_above_the_skew() {
    let (landed, duplicates) = three_processes(Duration::from_millis(20));
    let expected: Vec<Timestamp> = (1..=100).map(|k| ts(k * 100_000_000)).collect();
    assert_eq!(landed, expected);
    assert_eq!(
        duplicates, 200,
        "the two other processes pushed every tick too"
    );
}

/// The hazard the lead removes: with none, a tick's first job is acked before the skewed
/// processes push it, its key is free again, and it runs three times.
#[test]
fn without_a_lead_a_fast_job_lets_skewed_processes_run_a_tick_again() {
    let (landed, duplicates) = three_processes(Duration::ZERO);
    assert_eq!((landed.len(), duplicates), (300, 0));
}
