//! The store as a worker role: the schema migrated by another role (here the tests'
//! superuser), the worker granted only what the crate docs list ("Least privilege": no
//! DDL, no ownership). It opens (no DDL tried on a current schema), pushes, receives,
//! acks, dead-letters and redrives; its upkeep skips what needs the owner and says so once;
//! it pushes in its own transaction from Rust and SQL; granted an older version's rights,
//! it still opens and says its queue's limits were not recorded.
//! The role (a unique name) and its schema are dropped at the end, whatever happened.

use leaseq_test_kit::pg as common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leaseq_async::core::schedule::{Interval, Schedule};
use leaseq_async::{system_clock, Config, Scheduler, Timestamp};
use leaseq_postgres::{migrate, BytesCodec, OpenError};

/// Drops the role and the schema when the test ends, pass or fail.
struct Cleanup {
    url: String,
    role: String,
    schema: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let (url, role, schema) = (self.url.clone(), self.role.clone(), self.schema.clone());
        // On a thread of its own: the test's runtime may be gone or panicking.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async {
                let db = common::sql(&url).await;
                // Its sessions first (the store's pool may still be closing).
                let _ = db
                    .execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1",
                        &[&role],
                    )
                    .await;
                let _ = db
                    .batch_execute(&format!(
                        "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE; DROP OWNED BY \"{role}\";
                         DROP ROLE IF EXISTS \"{role}\";"
                    ))
                    .await;
            });
        })
        .join();
    }
}

/// `url` connecting as `role` instead of its own user.
/// A schedule of a tick a second begun 5 s ago: its first step pushes one catch-up tick
/// (`CatchUp::Once`, no lead) and writes the schedule's row.
fn scheduler() -> Scheduler<Interval> {
    let every = Interval::new(Duration::from_secs(1), Timestamp::ZERO).expect("interval");
    let start = system_clock().saturating_sub(Duration::from_secs(5));
    Scheduler::new(Schedule::new("ticks", every).expect("schedule")).starting_at(start)
}

fn as_role(url: &str, role: &str) -> String {
    let mut parts: Vec<String> = url
        .split_whitespace()
        .filter(|kv| !kv.starts_with("user=") && !kv.starts_with("password="))
        .map(str::to_string)
        .collect();
    parts.push(format!("user={role}"));
    parts.join(" ")
}

#[test]
fn a_worker_role_opens_pushes_receives_acks_without_ddl() {
    let Some(url) = common::server() else { return };
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() % 1_000_000_000_000);
    let id = format!("{}_{nanos}", std::process::id());
    let (role, schema) = (format!("leaseq_worker_{id}"), format!("leaseq_lp_{id}"));
    let _cleanup = Cleanup {
        url: url.clone(),
        role: role.clone(),
        schema: schema.clone(),
    };
    common::runtime().block_on(async {
        // The migration role's part: the schema, then the worker's grants (as documented).
        let (mut admin, conn) =
            tokio_postgres::connect(&common::plain(&url), tokio_postgres::NoTls)
                .await
                .expect("connect");
        tokio::spawn(conn);
        admin
            .batch_execute(&format!("CREATE ROLE \"{role}\" LOGIN"))
            .await
            .expect("create role");
        let worker_url = as_role(&url, &role);
        let options = || common::options().schema(schema.clone());
        // Before the schema exists the worker may not create it: a typed refusal.
        let e = common::try_open(
            &worker_url,
            "q".to_string(),
            Config::new(Duration::from_secs(5)),
            BytesCodec,
            options(),
        )
        .await
        .expect_err("a worker cannot create the schema");
        assert!(matches!(e, OpenError::Db(_)), "{e:?}");
        migrate(&mut admin, &schema).await.expect("migrate");
        admin
            .batch_execute(
                &leaseq_postgres::WORKER_GRANTS
                    .replace("{schema}", &schema)
                    .replace("{role}", &role),
            )
            .await
            .expect("grants");

        let q = common::try_open(
            &worker_url,
            common::unique("worker"),
            Config::new(Duration::from_secs(5)),
            BytesCodec,
            options(),
        )
        .await
        .expect("the worker opens a migrated schema");
        for i in 0..10u8 {
            q.push(vec![i]).await.expect("push");
        }
        for _ in 0..9 {
            common::receive(&q).await.ack().await.expect("ack");
        }
        let last = common::receive(&q).await;
        last.dead_letter("fails").await.expect("dead letter");
        let dead = q
            .dead_letters(leaseq_async::Page::first(10))
            .await
            .expect("dead letters");
        assert_eq!(dead.len(), 1);
        assert_eq!(q.redrive(dead[0].id).await.expect("redrive"), dead[0].id);
        common::receive(&q).await.ack().await.expect("ack");

        // The upkeep needs the table's owner: skipped, said once, never an error.
        q.store().run_upkeep().await.expect("upkeep degrades");
        q.store().run_upkeep().await.expect("upkeep degrades");
        let said = q.store().last_error().unwrap_or_default();
        assert!(said.contains("not the owner"), "{said:?}");
        assert_eq!(q.store().upkeep().vacuums, 0);
        let s = q.refresh_stats().await.expect("stats");
        assert_eq!(s.live(), 0);

        // Pushes in the worker's own transaction, from Rust and from SQL (schema step 6).
        let (mut db, conn) = tokio_postgres::connect(&worker_url, tokio_postgres::NoTls)
            .await
            .expect("connect as the worker");
        tokio::spawn(conn);
        let tx = db.transaction().await.expect("begin");
        q.store()
            .push_in(&tx, b"rust".to_vec(), leaseq_async::Push::new())
            .await
            .expect("push_in as the worker");
        tx.query_one(
            &format!("SELECT \"{schema}\".push_item($1, '\\x01', key => 'k')"),
            &[&q.store().queue_name()],
        )
        .await
        .expect("push_item as the worker");
        tx.commit().await.expect("commit");
        for _ in 0..2 {
            common::receive(&q).await.ack().await.expect("ack");
        }

        // A schedule's step as the worker (schema step 7, the `schedules` table): its tick
        // pushed and its cursor's row written in one transaction.
        let step = scheduler()
            .run_once(&q, |_| b"tick".to_vec())
            .await
            .expect("a schedule step as the worker");
        assert_eq!(step.pushed, 1, "{step:?}");
        let kept = q.schedules().await.expect("schedules");
        assert_eq!(kept.len(), 1, "{kept:?}");
        common::receive(&q).await.ack().await.expect("ack");
        q.close().await.expect("close");

        // A worker granted an older version's rights (version 5's: none on queue_settings,
        // schedules or queue_pauses) still opens, and says that its queue's limits were not
        // recorded; its schedule steps and pauses are refused (typed), its pushes and
        // receives go on (the claim reads the pause flag, readable by PUBLIC).
        admin
            .batch_execute(&format!(
                "REVOKE ALL ON \"{schema}\".queue_settings, \"{schema}\".schedules, \
                 \"{schema}\".queue_pauses FROM \"{role}\""
            ))
            .await
            .expect("revoke");
        let q = common::try_open::<Vec<u8>, _>(
            &worker_url,
            common::unique("worker-v5"),
            Config::new(Duration::from_secs(5)),
            BytesCodec,
            options(),
        )
        .await
        .expect("opens without the rights on queue_settings");
        let said = q.store().last_error().unwrap_or_default();
        assert!(said.contains("limits were not recorded"), "{said:?}");
        let refused = scheduler()
            .run_once(&q, |_| b"tick".to_vec())
            .await
            .expect_err("no rights on schedules");
        let chain = leaseq_async::ErrorChain(&refused).to_string();
        assert!(chain.contains("permission denied"), "{chain}");
        let refused = q.pause().await.expect_err("no rights to pause");
        let chain = leaseq_async::ErrorChain(&refused).to_string();
        assert!(chain.contains("permission denied"), "{chain}");
        q.push(b"still pushes".to_vec()).await.expect("push");
        common::receive(&q).await.ack().await.expect("ack");
        q.close().await.expect("close");
    });
}
