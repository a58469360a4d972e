//! Periodic jobs across processes on one Postgres queue, the schedules' cursors kept in the
//! schema: three OS processes (this test binary, run again as children) run two schedules,
//! a tick every 200 ms for 100 ticks, one with `CatchUp::Once` and one with `CatchUp::All`,
//! each process stepping both schedulers and running a consumer that acks every job. Twice,
//! every process is killed (SIGKILL) for 3 s, more than the 2 s lead, and three new ones
//! start.
//!
//! Every step reads the cursor and commits its ticks with the cursor's move in one
//! transaction, refused if another process moved it since: no tick is pushed twice and
//! none meets a duplicate key. After each outage `Once` pushes one catch-up tick and takes
//! back the ticks pushed ahead that came due meanwhile (dead letters, expired); `All`
//! pushes every missed tick. The check is the test kit's `schedule_check`, shared by the
//! SQLite test.

use leaseq_test_kit::pg as common;

use std::path::PathBuf;
use std::time::Duration;

use leaseq_async::{system_clock, Config, Reason, Scheduler, Timestamp};
use leaseq_postgres::{Options, PgInspector, PgQueue};
use leaseq_test_kit::child;
use leaseq_test_kit::schedule_check::{self as check, log_line, Record, Run, Seen, ALL, ONCE};
use leaseq_test_kit::schedule_run::{now_ns, schedule, through_outages, EVERY, TICKS};

async fn open(url: &str, schema: &str, queue: &str) -> PgQueue<Vec<u8>> {
    let options = Options::new()
        .schema(schema)
        .pool_size(4)
        .rescue_every(Duration::from_millis(250))
        .poll_interval(Duration::from_millis(200));
    common::open_bytes(
        url,
        queue.to_string(),
        Config::new(Duration::from_secs(1)),
        options,
    )
    .await
}

/// A child: its schedulers' first steps (after one returns, the restart's step, with its
/// take-backs, is committed, by this process or another), then its consumer; until the end
/// (plus a little), or killed.
#[test]
fn schedule_child() {
    let Some([url, schema, queue, log, start, end]) = child::vars(
        "LEASEQ_SCHEDULE_",
        ["URL", "SCHEMA", "QUEUE", "LOG", "START", "END"],
    ) else {
        return;
    };
    let log = PathBuf::from(log);
    let start = Timestamp::from_nanos(start.parse().unwrap());
    let stop = Timestamp::from_nanos(end.parse().unwrap()).saturating_add(Duration::from_secs(1));
    common::runtime().block_on(async {
        let q = open(&url, &schema, &queue).await;
        let mut schedulers =
            [ONCE, ALL].map(|which| (which, Scheduler::new(schedule(which)).starting_at(start)));
        let mut consumer = None;
        while system_clock() < stop {
            let mut wake = Timestamp::MAX;
            for (which, s) in &mut schedulers {
                let which = *which;
                match s
                    .run_once(&q, |tick| check::job(which, tick.as_nanos(), now_ns()))
                    .await
                {
                    Ok(step) => {
                        log_line(&log, check::step_line(which, &step));
                        wake = wake.min(step.wake_at);
                    }
                    // The server busy, say: tried again soon.
                    Err(e) => eprintln!("schedule step: {e:?}"),
                }
            }
            if consumer.is_none() {
                let (q, log) = (q.clone(), log.clone());
                consumer = Some(tokio::spawn(async move {
                    while system_clock() < stop {
                        let Ok(d) = q.receive_timeout(Duration::from_millis(100)).await else {
                            continue;
                        };
                        log_line(&log, check::ran_line(d.id().get(), d.item()));
                        let _ = d.ack().await;
                    }
                }));
            }
            let sleep = wake
                .saturating_duration_since(system_clock())
                .clamp(Duration::from_millis(5), Duration::from_millis(100));
            tokio::time::sleep(sleep).await;
        }
        if let Some(consumer) = consumer {
            consumer.await.expect("consumer");
        }
        q.close().await.expect("close");
    });
}

#[test]
fn three_processes_through_two_outages_push_each_tick_once() {
    let Some(url) = common::server() else { return };
    let queue = common::unique("schedule");
    let schema = common::SCHEMA.name();
    let log = std::env::temp_dir().join(format!("{queue}.log"));
    // Time for the children to start (and migrate the schema); then 100 ticks.
    let start = system_clock().saturating_add(Duration::from_secs(2));
    let end = start.saturating_add(EVERY * TICKS);
    let kills = through_outages(start, |_, _| {
        vec![
            ("LEASEQ_SCHEDULE_URL", url.clone().into()),
            ("LEASEQ_SCHEDULE_SCHEMA", schema.into()),
            ("LEASEQ_SCHEDULE_QUEUE", queue.clone().into()),
            ("LEASEQ_SCHEDULE_LOG", log.clone().into_os_string()),
            ("LEASEQ_SCHEDULE_START", start.as_nanos().to_string().into()),
            ("LEASEQ_SCHEDULE_END", end.as_nanos().to_string().into()),
        ]
    });

    // What the children recorded, and what the queue's rows hold.
    let check::Log {
        mut records,
        duplicates,
        withdrawn,
        ..
    } = check::read_log(&log);
    let shown = common::runtime().block_on(async {
        let client = common::sql(&url).await;
        let rows = client
            .query(
                &format!(
                    "SELECT id, payload, state, reason FROM \"{schema}\".items WHERE queue = $1"
                ),
                &[&queue],
            )
            .await
            .unwrap();
        for r in rows {
            let seen = match r.get::<_, i16>(2) {
                2 => Seen::Dead {
                    expired: r.get::<_, Option<i16>>(3) == Some(i16::from(Reason::Expired.code())),
                },
                _ => Seen::Live,
            };
            records.extend(Record::of(r.get::<_, i64>(0) as u64, r.get(1), seen));
        }
        let mut inspector = PgInspector::connect(&url, schema).await.unwrap();
        inspector.schedules(&queue).await.unwrap()
    });
    let run = Run::new(start, end, kills);
    check::check(&records, &run, duplicates, withdrawn);
    // Both schedules, their cursors past the end, as the inspector reads them.
    let names: Vec<&str> = shown.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["all", "once"]);
    assert!(shown.iter().all(|s| s.cursor.as_nanos() >= run.last));
    assert!(shown
        .iter()
        .all(|s| s.calendar.as_deref() == Some("every 200ms")));
}
