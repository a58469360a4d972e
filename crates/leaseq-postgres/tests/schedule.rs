//! Periodic jobs across processes: three "processes" (each its own pool, claimer and
//! settler) run one schedule into one Postgres queue for 100 ticks; the tick's key makes
//! each land once, whichever process pushed it first.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use leaseq_async::core::schedule::{Calendar, Interval, Schedule};
use leaseq_async::{system_clock, Config, Scheduler, Timestamp};

const EVERY: Duration = Duration::from_millis(100);
const TICKS: u32 = 100;

#[test]
fn three_processes_push_each_tick_once() {
    let Some(url) = common::server() else { return };
    common::runtime().block_on(async {
        let queue = common::unique("schedule");
        let config = Config::new(Duration::from_secs(5));
        let mut processes = Vec::new();
        for _ in 0..3 {
            processes.push(common::process(&url, &queue, config.clone()).await);
        }
        let every = Interval::new(EVERY, Timestamp::ZERO).unwrap();
        // The lead covers the three processes' planning and push latency (one clock here).
        let schedule = Schedule::new("pg-tick", every)
            .unwrap()
            .with_lead(Duration::from_millis(300));
        let start = system_clock();
        let mut schedulers = Vec::new();
        for q in &processes {
            let s = Scheduler::new(schedule.clone());
            let job = |tick: Timestamp| tick.as_nanos().to_be_bytes().to_vec();
            schedulers.push(tokio::spawn(s.run(q.clone(), job)));
        }
        // One consumer acks every job as it comes, until 100 ticks have passed.
        let end = start.saturating_add(EVERY * TICKS);
        let mut landed: BTreeMap<u64, u32> = BTreeMap::new();
        while system_clock() < end.saturating_add(Duration::from_millis(500)) {
            let Ok(d) = processes[0]
                .receive_timeout(Duration::from_millis(200))
                .await
            else {
                continue;
            };
            let tick = u64::from_be_bytes(d.item()[..8].try_into().unwrap());
            *landed.entry(tick).or_default() += 1;
            d.ack().await.expect("ack");
        }
        for q in &processes {
            let _ = q.close();
        }
        for s in schedulers {
            s.await.expect("scheduler task").expect("scheduler");
        }
        let twice: Vec<_> = landed.iter().filter(|(_, &n)| n > 1).collect();
        assert!(twice.is_empty(), "ticks run more than once: {twice:?}");
        // Every tick from the first after the start to the last before the end, none missing.
        let first = every.next_after(start).unwrap().as_nanos();
        let expected: Vec<u64> = (0..)
            .map(|k| first + k * EVERY.as_nanos() as u64)
            .take_while(|&t| t <= end.as_nanos())
            .collect();
        let got: Vec<u64> = landed
            .keys()
            .copied()
            .filter(|&t| t <= end.as_nanos())
            .collect();
        assert_eq!(got, expected);
        assert!(expected.len() >= TICKS as usize - 1);
    });
}
