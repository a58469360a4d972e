//! The run of the multi-process schedule tests: the two schedules, the timing, the
//! outages (every process killed, new ones started) and the checked run they make.

use std::ffi::OsString;
use std::num::NonZeroU32;
use std::process::{Child, Stdio};
use std::time::Duration;

use leaseq_async::core::schedule::{Calendar, CatchUp, Interval, Schedule};
use leaseq_async::{system_clock, Timestamp};

use crate::schedule_check::{Run, ONCE};

/// A tick every 200 ms.
pub const EVERY: Duration = Duration::from_millis(200);
/// 100 ticks.
pub const TICKS: u32 = 100;
/// Ticks pushed ahead by 2 s.
pub const LEAD: Duration = Duration::from_secs(2);
/// Processes at a time.
pub const PROCESSES: u64 = 3;
/// When every process is killed, after the start; and for how long.
pub const KILLS: [Duration; 2] = [Duration::from_secs(5), Duration::from_secs(12)];
/// How long every process stays dead (more than [`LEAD`]).
pub const OUTAGE: Duration = Duration::from_secs(3);

/// Schedule [`ONCE`] ("once", `CatchUp::Once`) or the other ("all", `CatchUp::All` with a
/// limit above any gap): every [`EVERY`] from the epoch, [`LEAD`] ahead.
pub fn schedule(which: u8) -> Schedule<Interval> {
    let every = Interval::new(EVERY, Timestamp::ZERO).expect("an interval");
    let (name, catch_up) = match which {
        ONCE => ("once", CatchUp::Once),
        _ => (
            "all",
            CatchUp::All {
                limit: NonZeroU32::new(1000).expect("not zero"),
            },
        ),
    };
    Schedule::new(name, every)
        .expect("a schedule")
        .with_lead(LEAD)
        .with_catch_up(catch_up)
}

/// Nanoseconds on the wall clock.
pub fn now_ns() -> u64 {
    system_clock().as_nanos()
}

/// Sleeps until `t` on the wall clock.
pub fn sleep_until(t: Timestamp) {
    std::thread::sleep(t.saturating_duration_since(system_clock()));
}

/// The outages: [`PROCESSES`] children running this test binary's `schedule_child` (the
/// `k`-th of generation `g` with the environment `env(g, k)`, their output discarded);
/// each of them killed at each of [`KILLS`] after `start` (SIGKILL), then [`OUTAGE`] later
/// the next generation spawned; then waits for the last one, each of which must succeed.
/// Returns when each kill was done (every process gone), ns on the wall clock.
pub fn through_outages(
    start: Timestamp,
    env: impl Fn(u64, u64) -> Vec<(&'static str, OsString)>,
) -> Vec<u64> {
    let spawn = |generation: u64| -> Vec<Child> {
        (0..PROCESSES)
            .map(|k| {
                crate::child::command("schedule_child", &env(generation, k))
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("spawn a child")
            })
            .collect()
    };
    let mut children = spawn(0);
    let mut kills = Vec::new();
    for (i, at) in KILLS.into_iter().enumerate() {
        sleep_until(start.saturating_add(at));
        for child in &mut children {
            child.kill().expect("SIGKILL a child");
        }
        for child in &mut children {
            let _ = child.wait();
        }
        // Every process is gone by now: no tick after this ran before the restart.
        kills.push(now_ns());
        std::thread::sleep(OUTAGE);
        children = spawn(i as u64 + 1);
    }
    for mut child in children {
        assert!(child.wait().expect("wait").success(), "a child failed");
    }
    kills
}

impl Run {
    /// The ticks of the run from `start` to `end`, and its `kills`.
    pub fn new(start: Timestamp, end: Timestamp, kills: Vec<u64>) -> Run {
        let every = Interval::new(EVERY, Timestamp::ZERO).expect("an interval");
        Run {
            every: EVERY.as_nanos() as u64,
            first: every.next_after(start).expect("a tick").as_nanos(),
            last: every.last_at_or_before(end).expect("a tick").as_nanos(),
            kills,
        }
    }
}
