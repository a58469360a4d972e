//! Snooze on Postgres (issue 32): a running lease put back for a while without counting its
//! attempt, the count kept in the row (`items.snoozes`) so that the bound
//! (`Config::max_snoozes`) holds across processes; past it each snooze counts an attempt, as
//! the core's does (reason `Released`, "snooze limit reached", dead-lettered once the
//! attempts are spent). Fenced as every settle; a lost reply never gives a wrong `Ok`.

use leaseq_test_kit::pg as common;

#[path = "faults/proxy.rs"]
mod proxy;

use std::time::Duration;

use leaseq_async::{Config, Nacked, Reason, ReceiptError, SettleError, Snoozed};
use leaseq_postgres::{BytesCodec, Postgres};

use common::{PATIENCE, SCHEMA};

/// `(state, attempts, snoozes, seconds until visible)` of row `id`.
async fn row(url: &str, id: leaseq_async::MessageId) -> (i16, i32, i32, f64) {
    let db = common::sql(url).await;
    let r = db
        .query_one(
            &format!(
                "SELECT state, attempts, COALESCE(snoozes, 0),
                        EXTRACT(EPOCH FROM visible_at - clock_timestamp())::float8
                 FROM {SCHEMA}.items WHERE id = $1"
            ),
            &[&(id.get() as i64)],
        )
        .await
        .expect("read the row");
    (r.get(0), r.get(1), r.get(2), r.get(3))
}

fn config(max_snoozes: u32) -> Config {
    Config::new(Duration::from_secs(30))
        .with_max_attempts(2)
        .with_max_snoozes(max_snoozes)
}

#[test]
fn a_snooze_puts_the_item_back_for_its_delay_without_counting_the_attempt() {
    common::with_server(|url| async move {
        let name = common::unique("snooze");
        let q = common::process(&url, &name, config(3)).await;
        assert!(leaseq_async::Store::snoozes(&**q.store()));
        q.push(b"job".to_vec()).await.expect("push");
        let mut d = common::receive(&q).await;
        let id = d.id();
        let r = d.snooze(Duration::from_secs(3600)).await;
        assert!(matches!(r, Ok(Snoozed::Later { snoozes: 1, .. })), "{r:?}");
        let (state, attempts, snoozes, until) = row(&url, id).await;
        assert_eq!((state, attempts, snoozes), (0, 0, 1));
        assert!(until > 3500.0, "visible in an hour, not {until} s");
        assert!(q.try_receive().is_none(), "not visible before its delay");
        // Visible again: the next delivery has the same attempt number.
        let db = common::sql(&url).await;
        db.execute(
            &format!("UPDATE {SCHEMA}.items SET visible_at = clock_timestamp() WHERE id = $1"),
            &[&(id.get() as i64)],
        )
        .await
        .expect("make it visible");
        let again = common::receive(&q).await;
        assert_eq!((again.id(), again.attempt()), (id, 1));
        assert_eq!(q.stats().snoozed, 1);
        assert_eq!(q.stats().nacks, 0);
        again.ack().await.expect("ack");
    });
}

#[test]
fn past_the_bound_each_snooze_counts_an_attempt_across_processes() {
    common::with_server(|url| async move {
        let name = common::unique("snooze-bound");
        let a = common::process(&url, &name, config(2)).await;
        let b = common::process(&url, &name, config(2)).await;
        a.push(b"job".to_vec()).await.expect("push");
        // Two uncounted snoozes, one in each process: the count is the row's.
        for (q, n) in [(&a, 1), (&b, 2)] {
            let mut d = common::receive(q).await;
            assert_eq!(d.attempt(), 1);
            let r = d.snooze(Duration::ZERO).await;
            assert!(
                matches!(r, Ok(Snoozed::Later { snoozes, .. }) if snoozes == n),
                "{r:?}"
            );
        }
        // The third is counted: a failed attempt, retried after the snooze's delay.
        let mut d = common::receive(&a).await;
        let id = d.id();
        assert_eq!(d.attempt(), 1);
        let r = d.snooze(Duration::ZERO).await;
        assert!(
            matches!(
                r,
                Ok(Snoozed::Counted(Nacked::Retrying { attempts: 1, .. }))
            ),
            "{r:?}"
        );
        assert_eq!(row(&url, id).await.1, 1, "the attempt counted");
        // The fourth spends the last attempt: a dead letter, reason Released.
        let mut d = common::receive(&b).await;
        assert_eq!(d.attempt(), 2);
        let r = d.snooze(Duration::ZERO).await;
        assert!(
            matches!(
                r,
                Ok(Snoozed::Counted(Nacked::DeadLettered { attempts: 2 }))
            ),
            "{r:?}"
        );
        let dead = common::dead_letters_reach(&a, 1, "the dead letter").await;
        assert_eq!(dead[0].reason, Reason::Released);
        assert_eq!(dead[0].last_error.as_deref(), Some("snooze limit reached"));
        assert_eq!(a.stats().snoozed + b.stats().snoozed, 2);
        assert_eq!(a.stats().nacks + b.stats().nacks, 2);
    });
}

#[test]
fn a_stale_holder_snoozes_nothing() {
    common::with_server(|url| async move {
        let name = common::unique("snooze-stale");
        let q = common::process(&url, &name, config(3)).await;
        q.push(b"job".to_vec()).await.expect("push");
        let mut d = common::receive(&q).await;
        let id = d.id();
        // Another process took the item over (its lease is the next token).
        let db = common::sql(&url).await;
        db.execute(
            &format!("UPDATE {SCHEMA}.items SET lease = lease + 1 WHERE id = $1"),
            &[&(id.get() as i64)],
        )
        .await
        .expect("take over");
        let r = d.snooze(Duration::ZERO).await;
        assert!(
            matches!(r, Err(SettleError::Stale(ReceiptError::Redelivered(x))) if x == id),
            "{r:?}"
        );
        let (state, _, snoozes, _) = row(&url, id).await;
        assert_eq!((state, snoozes), (1, 0), "unchanged");
        assert_eq!(q.stats().snoozed, 0);
    });
}

#[test]
fn a_snooze_whose_reply_was_lost_reports_what_it_did() {
    common::with_server(|url| async move {
        let direct: tokio_postgres::Config = url.parse().expect("url");
        let proxy = proxy::Proxy::without_faults(&direct).await;
        let q = leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(config(1))
            .name(common::unique("snooze-lost").to_string())
            .codec(BytesCodec)
            .open(Postgres::config(proxy.config(&direct)).options(common::options()))
            .await
            .expect("open");
        q.push(b"job".to_vec()).await.expect("push");
        // Below the bound: the lost try snoozed; the answer says so.
        let mut d = common::receive(&q).await;
        let id = d.id();
        proxy.lose_next_reply("WITH cur AS");
        let r = tokio::time::timeout(PATIENCE, d.snooze(Duration::ZERO))
            .await
            .expect("answered");
        assert!(!proxy.target_pending(), "the reply was lost");
        assert!(matches!(r, Ok(Snoozed::Later { snoozes: 1, .. })), "{r:?}");
        let (state, attempts, snoozes, _) = row(&url, id).await;
        assert_eq!((state, attempts, snoozes), (0, 0, 1), "snoozed once");
        // At the bound: the lost try changed nothing; the counted retry is made once.
        let mut d = common::receive(&q).await;
        proxy.lose_next_reply("WITH cur AS");
        let r = tokio::time::timeout(PATIENCE, d.snooze(Duration::ZERO))
            .await
            .expect("answered");
        assert!(
            matches!(
                r,
                Ok(Snoozed::Counted(Nacked::Retrying { attempts: 1, .. }))
            ),
            "{r:?}"
        );
        let (state, attempts, snoozes, _) = row(&url, id).await;
        assert_eq!((state, attempts, snoozes), (0, 1, 1), "counted once");
    });
}

/// A pool handler returns `JobError::snooze` (as on the memory store, whose test this
/// mirrors): within the bound its attempts are not counted; past it each snooze counts,
/// and an item that only snoozes ends in the dead letters with the reason said.
#[test]
fn a_pool_job_snoozes_within_the_bound_then_counts() {
    common::with_server(|url| async move {
        use std::sync::{Arc, Mutex};
        let name = common::unique("snooze-pool");
        let config = config(2).with_backoff(leaseq_async::Backoff::None);
        let q = common::process(&url, &name, config).await;
        let zero = q.push(b"0".to_vec()).await.expect("push"); // snoozes twice, then succeeds
        q.push(b"1".to_vec()).await.expect("push"); // snoozes forever
        let seen = Arc::new(Mutex::new(Vec::new()));
        let pool = leaseq_tokio::Pool::builder(q.clone()).workers(1).spawn({
            let seen = seen.clone();
            move |job| {
                let seen = seen.clone();
                async move {
                    let mut seen = seen.lock().unwrap();
                    seen.push((job.id, job.attempt));
                    let times = seen.iter().filter(|(i, _)| *i == job.id).count();
                    if job.id == zero && times > 2 {
                        return Ok(());
                    }
                    Err(leaseq_async::JobError::snooze(Duration::ZERO))
                }
            }
        });
        tokio::time::timeout(PATIENCE, q.wait_empty())
            .await
            .expect("every item acked or dead");
        let report = pool.shutdown(Duration::from_secs(5)).await;
        let seen = seen.lock().unwrap().clone();
        let of = |zeroth: bool| -> Vec<u32> {
            seen.iter()
                .filter(|(i, _)| (*i == zero) == zeroth)
                .map(|(_, a)| *a)
                .collect()
        };
        assert_eq!(of(true), [1, 1, 1]);
        // Two uncounted snoozes, then two counted ones end the item's two attempts.
        assert_eq!(of(false), [1, 1, 1, 2]);
        assert_eq!((report.stats.ok, report.stats.failed), (1, 0));
        let s = q.stats();
        assert_eq!((s.snoozed, s.nacks, s.dead_lettered), (4, 2, 1));
        let dead = common::dead_letters_reach(&q, 1, "the dead letter").await;
        assert_eq!(dead[0].reason, Reason::Released);
    });
}
