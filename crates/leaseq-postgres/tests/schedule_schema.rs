//! The `schedules` table as schema step 7: a version-6 schema (a current one set back: its
//! table dropped, its version written back) is migrated forward with it by the open, and a
//! scheduler step then keeps its cursor there; a schema set back to 6 again and migrated
//! keeps the row (the step creates the table only if it is missing).

use leaseq_test_kit::pg as common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leaseq_async::core::schedule::{Interval, Schedule};
use leaseq_async::{system_clock, Config, Scheduler, Timestamp};
use leaseq_postgres::{migrate, schema_version, PgInspector, PgQueue, SCHEMA_VERSION};

/// A schedule of a tick a second begun `start`: its first step pushes one catch-up tick
/// (`CatchUp::Once`, no lead) and writes the schedule's row.
fn scheduler(start: Timestamp) -> Scheduler<Interval> {
    let every = Interval::new(Duration::from_secs(1), Timestamp::ZERO).expect("interval");
    Scheduler::new(Schedule::new("ticks", every).expect("schedule")).starting_at(start)
}

async fn open(url: &str, schema: &str, queue: &str) -> PgQueue<Vec<u8>> {
    common::open_bytes(
        url,
        queue.to_string(),
        Config::new(Duration::from_secs(5)),
        common::options().schema(schema),
    )
    .await
}

#[test]
fn a_version_6_schema_gets_the_schedules_table_when_migrated() {
    common::with_server(|url| async move {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() % 1_000_000_000);
        // Under the run prefix: dropped with the run's leftovers should this test fail.
        let s = format!("{}{}_{nanos}_v6", common::RUN_PREFIX, std::process::id());
        let mut db = common::sql(&url).await;
        migrate(&mut db, &s).await.expect("migrate");
        db.batch_execute(&format!(
            "DROP TABLE \"{s}\".schedules;
             UPDATE \"{s}\".leaseq_meta SET value = 6 WHERE key = 'schema_version';"
        ))
        .await
        .expect("set up version 6");
        assert_eq!(schema_version(&db, &s).await.expect("version"), Some(6));
        // A version-6 schema has no schedules: the inspector reads none, and no error.
        let mut inspector = PgInspector::connect(&url, &s).await.expect("inspector");
        assert!(inspector
            .schedules("q")
            .await
            .expect("schedules")
            .is_empty());
        drop(inspector);

        // The open migrates to 7; a step then keeps the schedule's cursor in the table.
        let queue = common::unique("v6");
        let q = open(&url, &s, &queue).await;
        assert_eq!(
            schema_version(&db, &s).await.expect("version"),
            Some(SCHEMA_VERSION)
        );
        let start = system_clock().saturating_sub(Duration::from_secs(5));
        let step = scheduler(start)
            .run_once(&q, |_| b"tick".to_vec())
            .await
            .expect("a step");
        assert_eq!(step.pushed, 1, "{step:?}");
        common::receive(&q).await.ack().await.expect("ack");
        q.close().await.expect("close");

        // Set back to 6 and migrated again: the table and its row stay.
        db.batch_execute(&format!(
            "UPDATE \"{s}\".leaseq_meta SET value = 6 WHERE key = 'schema_version'"
        ))
        .await
        .expect("back to 6");
        migrate(&mut db, &s).await.expect("migrate from 6 again");
        let mut inspector = PgInspector::connect(&url, &s).await.expect("inspector");
        let kept = inspector.schedules(&queue).await.expect("schedules");
        drop(inspector);
        assert_eq!(kept.len(), 1, "{kept:?}");
        assert_eq!(kept[0].name, "ticks");
        assert!(kept[0].cursor > start, "{kept:?}");
        assert_eq!(kept[0].calendar.as_deref(), Some("every 1s"));

        common::drop_schema(&url, &s).await;
    });
}
