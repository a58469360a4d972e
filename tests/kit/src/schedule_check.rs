//! The ledger of the multi-process schedule tests (`leaseq-sqlite`'s and
//! `leaseq-postgres`'s `tests/schedule.rs`): what their processes recorded and what the
//! store holds at the end, checked for ticks lost or pushed twice.
//!
//! Two schedules run side by side on one queue, one with `CatchUp::Once`, one with
//! `CatchUp::All` (a limit above any gap), while every process is killed (SIGKILL) twice.
//! A job is `[schedule, tick (8 bytes), made at (8 bytes)]`, big-endian nanoseconds on the
//! wall clock: "made at" is when the scheduler made the job, just before its commit, so a
//! job made after its tick's time is a catch-up (pushed late), and one made before it was
//! pushed ahead. Every pushed job is seen somewhere: run by a consumer (logged before its
//! ack, so an acked job is never missing; one run again after a kill shows its id twice),
//! or still in the store at the end (live, or a dead letter).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

/// The schedule with `CatchUp::Once`.
pub const ONCE: u8 = 1;
/// The schedule with `CatchUp::All`.
pub const ALL: u8 = 2;

/// A job's bytes.
pub fn job(schedule: u8, tick: u64, made_at: u64) -> Vec<u8> {
    let mut b = vec![schedule];
    b.extend(tick.to_be_bytes());
    b.extend(made_at.to_be_bytes());
    b
}

/// A job's schedule, tick and time made.
pub fn parse(bytes: &[u8]) -> Option<(u8, u64, u64)> {
    let (&schedule, rest) = bytes.split_first()?;
    let tick = u64::from_be_bytes(rest.get(..8)?.try_into().ok()?);
    let made_at = u64::from_be_bytes(rest.get(8..16)?.try_into().ok()?);
    Some((schedule, tick, made_at))
}

/// Where a pushed job was seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// A consumer got it.
    Ran,
    /// In the store at the end, ready, delayed or in flight.
    Live,
    /// A dead letter at the end; `expired`: of reason `Expired` (a tick taken back).
    Dead {
        /// Of reason `Expired` (a tick taken back).
        expired: bool,
    },
}

/// One sighting of a pushed job.
#[derive(Clone, Debug)]
pub struct Record {
    /// The job's message id.
    pub id: u64,
    /// Its schedule ([`ONCE`] or [`ALL`]).
    pub schedule: u8,
    /// Its tick, in nanoseconds on the wall clock.
    pub tick: u64,
    /// When its scheduler made it, in nanoseconds on the wall clock.
    pub made_at: u64,
    /// Where it was seen.
    pub seen: Seen,
}

impl Record {
    /// A sighting of the job `bytes`, if they are one.
    pub fn of(id: u64, bytes: &[u8], seen: Seen) -> Option<Record> {
        let (schedule, tick, made_at) = parse(bytes)?;
        Some(Record {
            id,
            schedule,
            tick,
            made_at,
            seen,
        })
    }
}

/// Appends one line to the log the processes share: one `write` on an `O_APPEND` file, so
/// lines of processes do not mix (a SIGKILL may cut the last one).
pub fn log_line(log: &Path, line: String) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    f.write_all(format!("{line}\n").as_bytes()).unwrap();
}

/// The line of a job run: its id and bytes.
pub fn ran_line(id: u64, bytes: &[u8]) -> String {
    let (which, tick, made) = parse(bytes).expect("a job");
    format!("R {id} {which} {tick} {made}")
}

/// The line of a step of schedule `which`.
pub fn step_line(which: u8, step: &leaseq_async::SchedulerStep) -> String {
    format!(
        "S {which} {} {} {} {}",
        step.pushed, step.duplicates, step.withdrawn, step.conflicts
    )
}

/// What the log says: the jobs run, the steps' duplicate keys and `Once`'s ticks taken
/// back, and the pids of the `O <pid>` lines (a SQLite file's owners).
#[derive(Default)]
pub struct Log {
    /// The jobs run.
    pub records: Vec<Record>,
    /// The steps' duplicate keys.
    pub duplicates: usize,
    /// `Once`'s ticks taken back.
    pub withdrawn: usize,
    /// Commits refused because another process had moved the cursor (each re-planned).
    pub conflicts: usize,
    /// The pids of the `O <pid>` lines (a SQLite file's owners).
    pub owners: BTreeSet<String>,
}

/// Reads the log (and removes it).
pub fn read_log(log: &Path) -> Log {
    let mut out = Log::default();
    for line in std::fs::read_to_string(log).unwrap().lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        match parts[..] {
            ["R", id, which, tick, made] => out.records.push(Record {
                id: id.parse().unwrap(),
                schedule: which.parse().unwrap(),
                tick: tick.parse().unwrap(),
                made_at: made.parse().unwrap(),
                seen: Seen::Ran,
            }),
            ["S", which, _, dups, gone, lost] => {
                out.duplicates += dups.parse::<usize>().unwrap();
                out.conflicts += lost.parse::<usize>().unwrap();
                if which == ONCE.to_string() {
                    out.withdrawn += gone.parse::<usize>().unwrap();
                }
            }
            ["O", pid] => {
                out.owners.insert(pid.to_string());
            }
            // A line cut by a SIGKILL.
            _ => {}
        }
    }
    let _ = std::fs::remove_file(log);
    eprintln!(
        "{} lost compare-and-sets, each planned again",
        out.conflicts
    );
    out
}

/// The run: the ticks every `every` ns checked (`first` to `last`), and when every process
/// was killed.
pub struct Run {
    /// The ticks' period, ns.
    pub every: u64,
    /// The first tick checked, ns on the wall clock.
    pub first: u64,
    /// The last tick checked.
    pub last: u64,
    /// When every process was killed, ns on the wall clock.
    pub kills: Vec<u64>,
}

#[derive(Default, Debug)]
struct Tick {
    ids: BTreeSet<u64>,
    made_at: u64,
    ran: bool,
    live: bool,
    expired: bool,
    dead_other: bool,
}

/// Checks both schedules; `duplicates` is the sum of the steps' duplicate keys, `withdrawn`
/// of the `Once` schedule's ticks taken back.
pub fn check(records: &[Record], run: &Run, duplicates: usize, withdrawn: usize) {
    assert_eq!(
        duplicates, 0,
        "a push met a duplicate key: the stored cursor did not keep the processes apart"
    );
    let expected: Vec<u64> = (0..)
        .map(|k| run.first + k * run.every)
        .take_while(|&t| t <= run.last)
        .collect();
    // Each outage: from its kill to the next (or past the last tick).
    let windows: Vec<(u64, u64)> = run
        .kills
        .iter()
        .enumerate()
        .map(|(i, &k)| (k, run.kills.get(i + 1).copied().unwrap_or(u64::MAX)))
        .collect();
    for schedule in [ONCE, ALL] {
        let mut ticks: BTreeMap<u64, Tick> = BTreeMap::new();
        for r in records.iter().filter(|r| r.schedule == schedule) {
            let t = ticks.entry(r.tick).or_default();
            t.ids.insert(r.id);
            t.made_at = r.made_at;
            match r.seen {
                Seen::Ran => t.ran = true,
                Seen::Live => t.live = true,
                Seen::Dead { expired: true } => t.expired = true,
                Seen::Dead { expired: false } => t.dead_other = true,
            }
        }
        let twice: Vec<_> = ticks.iter().filter(|(_, t)| t.ids.len() > 1).collect();
        assert!(
            twice.is_empty(),
            "schedule {schedule}: ticks pushed twice: {twice:?}"
        );
        let late: Vec<u64> = expected
            .iter()
            .copied()
            .filter(|t| ticks.get(t).is_some_and(|x| x.made_at > *t))
            .collect();
        let late_in = |(from, to): (u64, u64)| -> Vec<u64> {
            late.iter()
                .copied()
                .filter(|&t| t > from && t <= to)
                .collect()
        };
        let in_window = |t: u64| windows.iter().any(|&(from, to)| t > from && t <= to);
        assert!(
            late.iter().all(|&t| in_window(t)),
            "schedule {schedule}: ticks pushed late outside an outage: {late:?} (kills {:?})",
            run.kills
        );
        let count = |f: fn(&Tick) -> bool| ticks.values().filter(|t| f(t)).count();
        eprintln!(
            "schedule {schedule}: {} ticks pushed ({} run, {} live, {} taken back), late: {late:?}, kills: {:?}",
            ticks.len(),
            count(|t| t.ran),
            count(|t| t.live && !t.ran),
            count(|t| t.expired),
            run.kills
        );
        if schedule == ALL {
            for &t in &expected {
                let x = ticks.get(&t);
                assert!(
                    x.is_some_and(|x| x.ids.len() == 1 && (x.ran || x.live)),
                    "All: tick {t} not pushed once and run: {x:?}"
                );
            }
            for &w in &windows {
                assert!(!late_in(w).is_empty(), "All: nothing caught up after {w:?}");
            }
            continue;
        }
        // Once: one catch-up per outage, the ticks of the outage before it not run (those
        // pushed ahead before the kill taken back: dead letters, expired), every other
        // tick pushed once.
        let mut outage_ticks = BTreeSet::new();
        for &w in &windows {
            let caught = late_in(w);
            assert_eq!(
                caught.len(),
                1,
                "Once: catch-up ticks after the kill at {}: {caught:?}",
                w.0
            );
            let l = caught[0];
            assert!(ticks[&l].ran, "Once: the catch-up tick {l} did not run");
            for &t in expected.iter().filter(|&&t| t > w.0 && t < l) {
                outage_ticks.insert(t);
                if let Some(x) = ticks.get(&t) {
                    assert!(
                        !x.ran && x.expired && x.made_at < w.0,
                        "Once: tick {t} of the outage after {} ran or was not taken back: {x:?}",
                        w.0
                    );
                }
            }
        }
        for &t in expected.iter().filter(|t| !outage_ticks.contains(t)) {
            assert!(
                ticks.get(&t).is_some_and(|x| x.ids.len() == 1),
                "Once: tick {t} not pushed"
            );
        }
        assert!(withdrawn > 0, "Once: no tick pushed ahead was taken back");
    }
}
