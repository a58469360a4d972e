//! A schedule whose cursor is shared (kept in a store, moved by compare-and-set): the stale
//! ticks pushed ahead against a brute-force model, the protocol of several processes that
//! read the cursor, plan and commit (a lost race pushes nothing and plans again) through
//! outages and a clock that steps back, and `Queue::expire_key`, which takes a stale tick
//! back.

use std::time::Duration;

use leaseq_core::schedule::{CatchUp, Schedule};
use leaseq_core::{Config, EventMask, PushOptions, Queue, Reason, Timestamp, UniqueKey};
use leaseq_test_kit::calendar::{all, calendar, Table};
use leaseq_test_kit::seeded::seed_config;
use leaseq_test_kit::time::{secs, ts};
use proptest::prelude::*;

/// The stale ticks, the slow obvious way.
fn model(ticks: &[u64], catch_up: CatchUp, since: u64, cursor: u64, now: u64) -> Vec<u64> {
    let due: Vec<u64> = ticks
        .iter()
        .copied()
        .filter(|&t| t > since && t <= cursor.min(now))
        .collect();
    let latest = ticks.iter().copied().filter(|&t| t <= now).max();
    let missed = ticks.iter().filter(|&&t| t > cursor && t <= now).count() as u64;
    let keep = match catch_up {
        CatchUp::Skip { grace } => u64::from(
            latest.is_some()
                && due.last() == latest.as_ref()
                && now - latest.unwrap() <= grace.as_nanos() as u64,
        ),
        CatchUp::Once => u64::from(latest.is_some() && due.last() == latest.as_ref()),
        CatchUp::All { limit } => u64::from(limit.get()).saturating_sub(missed),
        _ => unreachable!(),
    };
    let stale = &due[..due.len().saturating_sub(keep as usize)];
    let max = Schedule::<Table>::MAX_BATCH;
    stale[stale.len().saturating_sub(max)..].to_vec()
}

/// One process's view of the shared cursor: `(cursor, moved_at)`.
type Stored = Option<(u64, u64)>;

proptest! {
    #![proptest_config(seed_config(2000, 0x57a1e))]

    #[test]
    fn stale_matches_the_model(
        (ticks, catch_up) in calendar(),
        since in 0u64..1500,
        cursor in 0u64..1500,
        now in 0u64..1500,
    ) {
        let s = Schedule::new("m", Table(ticks.clone())).unwrap().with_catch_up(catch_up);
        let got: Vec<u64> = s.stale(ts(since), ts(cursor), ts(now)).iter().map(|t| t.as_nanos()).collect();
        prop_assert_eq!(got, model(&ticks, catch_up, since, cursor, now));
    }

    /// Processes step in a random order, each at its own clock (forward jumps, outages,
    /// backward steps), reading the stored cursor, planning, and committing only if the
    /// cursor is still the one read; some read and then lose the race to another's commit.
    /// No tick is ever pushed twice, a tick taken back as stale was pushed, and every tick
    /// from the start to the final cursor is pushed or skipped exactly once.
    #[test]
    fn processes_sharing_a_cursor_push_each_tick_once(
        (ticks, catch_up) in calendar(),
        lead in 0u64..30,
        start in 0u64..100,
        steps in prop::collection::vec((0usize..3, -100i64..250, any::<bool>()), 1..60),
    ) {
        let s = Schedule::new("d", Table(ticks.clone())).unwrap()
            .with_catch_up(catch_up)
            .with_lead(Duration::from_nanos(lead));
        let mut stored: Stored = None;
        let mut clocks = [start; 3];
        let (mut pushed, mut skipped, mut taken_back) = (Vec::new(), Vec::new(), Vec::new());
        for (who, jump, race) in steps {
            clocks[who] = clocks[who].saturating_add_signed(jump);
            let now = clocks[who];
            // A read, then (when `race`) another process's whole step before the commit.
            let mut read = stored;
            let mut lost = race;
            loop {
                let (cursor, since) = read.unwrap_or((start, start));
                let plan = s.plan(ts(cursor), ts(now));
                let stale = s.stale(ts(since), ts(cursor), ts(now));
                if plan.cursor == ts(cursor) && stale.is_empty() && read.is_some() {
                    break; // nothing to commit
                }
                if lost {
                    // Another process (the next one, at the same clock) commits first.
                    let (c2, m2) = stored.unwrap_or((start, start));
                    let p2 = s.plan(ts(c2), ts(now));
                    let st2 = s.stale(ts(m2), ts(c2), ts(now));
                    pushed.extend(p2.ticks.iter().map(|t| t.as_nanos()));
                    taken_back.extend(st2.iter().map(|t| t.as_nanos()));
                    if let Some(sk) = p2.skipped {
                        skipped.extend(ticks.iter().copied().filter(|&t| ts(t) >= sk.first && ts(t) <= sk.last));
                    }
                    stored = Some((p2.cursor.as_nanos(), now.max(m2)));
                    lost = false;
                }
                if stored != read {
                    // Refused: nothing pushed; read again and plan again.
                    read = stored;
                    continue;
                }
                pushed.extend(plan.ticks.iter().map(|t| t.as_nanos()));
                taken_back.extend(stale.iter().map(|t| t.as_nanos()));
                if let Some(sk) = plan.skipped {
                    skipped.extend(ticks.iter().copied().filter(|&t| ts(t) >= sk.first && ts(t) <= sk.last));
                }
                // The time the cursor moved never goes back (a process whose clock is behind
                // must not make ticks another one skipped look pushed ahead).
                stored = Some((plan.cursor.as_nanos(), now.max(since)));
                break;
            }
        }
        let mut sorted = pushed.clone();
        sorted.sort_unstable();
        sorted.dedup();
        prop_assert_eq!(sorted.len(), pushed.len(), "a tick pushed twice: {:?}", pushed);
        for t in &taken_back {
            prop_assert!(pushed.contains(t), "tick {} taken back but never pushed", t);
        }
        let mut seen = pushed.clone();
        seen.extend(&skipped);
        seen.sort_unstable();
        let cursor = stored.map_or(start, |(c, _)| c);
        let expected: Vec<u64> = ticks.iter().copied().filter(|&t| t > start && t <= cursor).collect();
        prop_assert_eq!(seen, expected);
    }
}

/// After an outage, `Once` lets one tick run: the plan's latest missed tick, or the latest
/// tick pushed ahead when no tick after the cursor is due yet; `All` keeps the latest ticks
/// pushed ahead within its limit, counting the missed ones after the cursor first.
#[test]
fn an_outage_leaves_one_late_tick_with_once_and_the_limit_with_all() {
    let every =
        leaseq_core::schedule::Interval::new(Duration::from_secs(1), Timestamp::ZERO).unwrap();
    let s = |c| {
        Schedule::new("s", every)
            .unwrap()
            .with_catch_up(c)
            .with_lead(Duration::from_secs(5))
    };
    // The last commit at 100 s pushed 101..=105 ahead.
    let (since, cursor) = (secs(100), secs(105));
    // Back at 103.5 s: 103 is the latest due and was pushed ahead; nothing after the cursor
    // is due, so the plan pushes no catch-up tick.
    let now = Timestamp::from_nanos(103_500_000_000);
    assert_eq!(
        s(CatchUp::Once).stale(since, cursor, now),
        [secs(101), secs(102)]
    );
    assert!(s(CatchUp::Once).plan(cursor, now).skipped.is_none());
    // Back at 108.5 s: the plan runs 108 once; every tick pushed ahead is stale.
    let now = Timestamp::from_nanos(108_500_000_000);
    assert_eq!(s(CatchUp::Once).plan(cursor, now).ticks[0], secs(108));
    assert_eq!(
        s(CatchUp::Once).stale(since, cursor, now),
        (101..=105).map(secs).collect::<Vec<_>>()
    );
    // `All` with a limit of 5: 106..=108 are missed (the plan runs them), so 104 and 105
    // of those pushed ahead run too, and 101..=103 are stale.
    assert_eq!(
        s(all(5)).stale(since, cursor, now),
        (101..=103).map(secs).collect::<Vec<_>>()
    );
    assert!(s(all(100)).stale(since, cursor, now).is_empty());
    // A clock stepped back before the last commit: nothing is stale.
    assert!(s(CatchUp::Once).stale(since, cursor, secs(90)).is_empty());
}

/// `expire_key` dead-letters a ready or a delayed holder of the key as expired and frees the
/// key; a holder in flight keeps its lease; an unknown key is `None`.
#[test]
fn expire_key_takes_back_a_waiting_holder_only() {
    let config = Config::new(Duration::from_secs(10)).with_events(EventMask::DEAD_LETTERED);
    let mut q: Queue<&str> = Queue::new(config).unwrap();
    let key = |k: &str| UniqueKey::new(k).unwrap();
    let now = secs(1);
    let ready = q.push_with("a", now, PushOptions::new().key("a")).unwrap();
    let delayed = q
        .push_with(
            "b",
            now,
            PushOptions::new().key("b").delay(Duration::from_secs(5)),
        )
        .unwrap();
    q.push_with("c", now, PushOptions::new().key("c")).unwrap();
    // "a" is first in line: leased, it is left alone.
    let lease = q.receive(now).unwrap();
    assert_eq!(lease.id, ready);
    assert_eq!(
        q.expire_key(&key("a"), now),
        None,
        "in flight: left to its lease"
    );
    assert_eq!(q.expire_key(&key("b"), now), Some(delayed));
    assert_eq!(q.expire_key(&key("zz"), now), None);
    let c = q.key_holder("c").unwrap();
    assert_eq!(q.expire_key(&key("c"), now), Some(c));
    assert_eq!(q.stats().expired, 2);
    assert_eq!(q.get_dead_letter(delayed).unwrap().reason, Reason::Expired);
    assert_eq!(q.key_holder("b"), None, "the key is free");
    assert!(q.push_with("b2", now, PushOptions::new().key("b")).is_ok());
    let mut events = 0;
    while q.poll_event().is_some() {
        events += 1;
    }
    assert_eq!(events, 2);
    q.check_invariants().unwrap();
}
