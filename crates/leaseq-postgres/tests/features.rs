//! The queue's features on PostgreSQL: delays, priorities, time to live, nack with backoff
//! up to the dead letters and back (redrive), cancel, `try_receive` on a current-thread
//! runtime, batch receive, queues sharing a schema, and `wait_empty`.

use leaseq_test_kit::pg as common;

use common::*;

use std::time::Duration;

use leaseq_async::{
    Acked, AdminError, Backoff, CancelError, Config, Nacked, Push, Reason, ReceiptError,
    ReceiveError, SettleError,
};
use leaseq_postgres::PgQueue;

async fn queue(url: &str, prefix: &str, config: Config) -> PgQueue<Vec<u8>> {
    common::open_bytes(url, common::unique(prefix).to_string(), config, options()).await
}

fn config() -> Config {
    Config::new(Duration::from_secs(30))
}

async fn nothing_for(q: &PgQueue<Vec<u8>>, wait: Duration) {
    let r = q.receive_timeout(wait).await;
    assert!(matches!(r, Err(ReceiveError::Timeout)), "unexpected: {r:?}");
}

/// Seconds until the item's row is claimable, on the database's clock.
async fn visible_in(db: &tokio_postgres::Client, id: leaseq_async::MessageId) -> f64 {
    db.query_one(
        &format!(
            "SELECT EXTRACT(EPOCH FROM visible_at - clock_timestamp())::float8
             FROM {SCHEMA}.items WHERE id = $1"
        ),
        &[&(id.get() as i64)],
    )
    .await
    .expect("read visible_at")
    .get(0)
}

/// Makes the item's row claimable now, as if its delay or backoff had run out.
async fn make_visible(db: &tokio_postgres::Client, id: leaseq_async::MessageId) {
    let n = db
        .execute(
            &format!("UPDATE {SCHEMA}.items SET visible_at = clock_timestamp() WHERE id = $1"),
            &[&(id.get() as i64)],
        )
        .await
        .expect("move visible_at");
    assert_eq!(n, 1, "the item's row");
}

#[test]
fn delayed_items_become_visible_after_their_delay() {
    common::with_server(|url| async move {
        let db = sql(&url).await;
        let q = queue(&url, "delay", config()).await;
        let id = leaseq_test_kit::steps::push_in_a_minute(&q, b"later").await;
        let wait = visible_in(&db, id).await;
        assert!((59.0..=60.0).contains(&wait), "visible in {wait} s");
        nothing_for(&q, Duration::from_millis(300)).await;
        // Its time comes (moved forward instead of waited for): it is claimed.
        make_visible(&db, id).await;
        let d = receive(&q).await;
        assert_eq!((d.id(), d.attempt()), (id, 1));
        d.ack().await.expect("ack");
    });
}

#[test]
fn higher_priorities_are_claimed_first() {
    common::with_server(|url| async move {
        let q = queue(&url, "priority", config()).await;
        let levels = [0u8, 3, 7, 1, 5, 7, 0];
        for (seq, level) in levels.iter().enumerate() {
            let push = Push::new().priority(*level);
            q.push_with(vec![*level, seq as u8], push)
                .await
                .expect("push");
        }
        let mut got: Vec<Vec<u8>> = Vec::new();
        for d in q.receive_batch(3).await {
            got.push(d.item().clone());
            d.ack().await.expect("ack");
        }
        while got.len() < levels.len() {
            let d = receive(&q).await;
            got.push(d.item().clone());
            d.ack().await.expect("ack");
        }
        // Highest level first; within a level, in push order.
        let want: Vec<Vec<u8>> = [[7, 2], [7, 5], [5, 4], [3, 1], [1, 3], [0, 0], [0, 6]]
            .iter()
            .map(|x| x.to_vec())
            .collect();
        assert_eq!(got, want);
    });
}

#[test]
fn items_past_their_ttl_become_dead_letters() {
    common::with_server(|url| async move {
        let q = queue(&url, "ttl", config()).await;
        let push = Push::new().ttl(Duration::from_millis(300));
        let id = q
            .push_with(b"stale soon".to_vec(), push)
            .await
            .expect("push");
        let keep = q.push(b"fresh".to_vec()).await.expect("push");
        let dead = common::dead_letters_reach(&q, 1, "never expired").await;
        assert_eq!(dead.len(), 1);
        assert_eq!((dead[0].id, dead[0].reason), (id, Reason::Expired));
        assert_eq!(dead[0].item.as_deref(), Ok(&b"stale soon"[..]));
        let d = receive(&q).await;
        assert_eq!(d.id(), keep, "only the fresh item is delivered");
        d.ack().await.expect("ack");
        nothing_for(&q, Duration::from_millis(300)).await;
        assert_eq!(q.stats().expired, 1);

        // A lease never outlives its item (visibility 30 s, time to live 600 ms): the item
        // leaves for the dead letters at its expiry, not at the end of the visibility.
        let push = Push::new().ttl(Duration::from_millis(600));
        let leased = q.push_with(b"leased".to_vec(), push).await.expect("push");
        let d = receive(&q).await;
        assert_eq!(d.id(), leased);
        let expires_at = d.expires_at().expect("pushed with a time to live");
        assert!(
            d.deadline() <= expires_at.saturating_add(Duration::from_millis(50)),
            "the lease ends after the item expires"
        );
        common::dead_letters_reach(&q, 2, "the leased item never expired").await;
        let dead = q
            .dead_letters(leaseq_async::Page::first(10))
            .await
            .expect("dead letters");
        assert_eq!((dead[1].id, dead[1].reason), (leased, Reason::Expired));
        assert!(d.ack().await.is_err(), "an expired item is not acked");
    });
}

#[test]
fn nacks_back_off_then_dead_letter_then_redrive() {
    common::with_server(|url| async move {
        let db = sql(&url).await;
        // Without the default jitter: the test times the fixed backoff exactly.
        let config = config()
            .with_max_attempts(3)
            .with_backoff(Backoff::Fixed(Duration::from_secs(60)))
            .without_jitter();
        let q = queue(&url, "nack", config).await;
        let id = q.push(b"flaky".to_vec()).await.expect("push");
        let mut d = receive(&q).await;
        for attempt in 1..=2u32 {
            assert_eq!((d.id(), d.attempt()), (id, attempt));
            match d.nack(format!("boom {attempt}")).await {
                Ok(Nacked::Retrying { attempts, .. }) => assert_eq!(attempts, attempt),
                other => panic!("attempt {attempt}: expected a retry, got {other:?}"),
            }
            // Back after the backoff (moved forward instead of waited for), not before.
            let wait = visible_in(&db, id).await;
            assert!((59.0..=60.0).contains(&wait), "back in {wait} s");
            nothing_for(&q, Duration::from_millis(300)).await;
            make_visible(&db, id).await;
            d = receive(&q).await;
        }
        assert_eq!(d.attempt(), 3);
        assert_eq!(
            d.nack("boom 3").await,
            Ok(Nacked::DeadLettered { attempts: 3 })
        );
        nothing_for(&q, Duration::from_millis(300)).await;
        let dead = q
            .dead_letters(leaseq_async::Page::first(10))
            .await
            .expect("dead letters");
        assert_eq!(dead.len(), 1, "{dead:?}");
        assert_eq!((dead[0].id, dead[0].attempts), (id, 3));
        assert_eq!(dead[0].reason, Reason::Nacked);
        assert_eq!(dead[0].last_error.as_deref(), Some("boom 3"));
        assert_eq!(dead[0].item.as_deref(), Ok(&b"flaky"[..]));
        assert_eq!(
            q.cancel(id).await,
            Err(AdminError::Refused(CancelError::DeadLettered(id)))
        );
        let s = q.refresh_stats().await.expect("stats");
        assert_eq!((s.dead, s.live(), s.dead_lettered, s.nacks), (1, 0, 1, 3));

        assert_eq!(q.redrive(id).await, Ok(id));
        assert_eq!(
            q.redrive(id).await,
            Err(AdminError::Refused(leaseq_async::RedriveError::NotFound(
                id
            ))),
            "not dead now"
        );
        let d = receive(&q).await;
        assert_eq!((d.id(), d.attempt()), (id, 1), "attempts start over");
        d.ack().await.expect("ack");
        assert!(q
            .dead_letters(leaseq_async::Page::first(10))
            .await
            .expect("dead")
            .is_empty());
    });
}

#[test]
fn cancel_hands_waiting_items_back_and_leaves_leased_ones() {
    common::with_server(|url| async move {
        let q = queue(&url, "cancel", config()).await;
        let waiting = leaseq_test_kit::steps::push_in_a_minute(&q, b"waiting").await;
        assert_eq!(q.cancel(waiting).await, Ok(b"waiting".to_vec()));
        assert_eq!(
            q.cancel(waiting).await,
            Err(AdminError::Refused(CancelError::NotFound(waiting)))
        );

        let leased = q.push(b"leased".to_vec()).await.expect("push");
        let d = receive(&q).await;
        assert_eq!(
            q.cancel(leased).await,
            Err(AdminError::Refused(CancelError::InFlight(leased)))
        );
        assert_eq!(d.ack().await, Ok(Acked::OnTime), "left to its holder");

        let taken = q.push(b"taken".to_vec()).await.expect("push");
        let d = receive(&q).await;
        assert_eq!(q.cancel_leased(taken).await, Ok(b"taken".to_vec()));
        let r = d.ack().await;
        assert!(
            matches!(
                r.as_ref().map_err(SettleError::stale),
                Err(Some(
                    ReceiptError::Cancelled(_) | ReceiptError::AlreadyAcked(_)
                ))
            ),
            "{r:?}"
        );
        nothing_for(&q, Duration::from_millis(300)).await;
    });
}

#[test]
fn try_receive_works_on_a_current_thread_runtime() {
    let Some(url) = common::server() else { return };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let q = queue(&url, "try-receive", config()).await;
        assert!(q.try_receive().is_none(), "empty");
        let id = q.push(b"one".to_vec()).await.expect("push");
        let d = q.try_receive().expect("a committed item, visible now");
        assert_eq!(d.id(), id);
        assert_eq!(d.ack().await, Ok(Acked::OnTime));
        for i in 0..5u8 {
            q.push(vec![i]).await.expect("push");
        }
        let batch = q.try_receive_batch(16);
        assert_eq!(batch.len(), 5);
        for d in batch {
            d.ack().await.expect("ack");
        }
        assert!(q.try_receive().is_none(), "drained");
    });
}

#[test]
fn receive_batch_takes_up_to_sixteen() {
    common::with_server(|url| async move {
        let q = queue(&url, "batch", config()).await;
        q.try_push_batch((0..39u8).map(|i| vec![i]))
            .expect("push batch");
        q.push(vec![39]).await.expect("push"); // returns once every row is committed
        let mut seen = Vec::new();
        let mut batches = 0;
        while seen.len() < 40 {
            let batch = tokio::time::timeout(PATIENCE, q.receive_batch(16))
                .await
                .expect("a batch");
            assert!((1..=16).contains(&batch.len()), "{}", batch.len());
            if batches == 0 {
                assert_eq!(batch.len(), 16, "40 visible: a full batch");
            }
            batches += 1;
            for d in batch {
                seen.push(d.item()[0]);
                d.ack().await.expect("ack");
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..40).collect::<Vec<u8>>());
        nothing_for(&q, Duration::from_millis(300)).await;
    });
}

#[test]
fn queues_in_one_schema_never_see_each_others_items() {
    common::with_server(|url| async move {
        let a = queue(&url, "iso-a", config()).await;
        let b = queue(&url, "iso b's \"ünïcode\" \\", config()).await; // any text
        let mut a_ids = Vec::new();
        for i in 0..3u8 {
            a_ids.push(a.push(vec![b'a', i]).await.expect("push"));
            b.push(vec![b'b', i]).await.expect("push");
        }
        assert_eq!(
            b.cancel(a_ids[0]).await,
            Err(AdminError::Refused(CancelError::NotFound(a_ids[0])))
        );
        for (q, tag) in [(&a, b'a'), (&b, b'b')] {
            for _ in 0..3 {
                let d = receive(q).await;
                assert_eq!(d.item()[0], tag);
                d.ack().await.expect("ack");
            }
            nothing_for(q, Duration::from_millis(300)).await;
        }
        let s = a.refresh_stats().await.expect("stats");
        assert_eq!((s.live(), s.dead), (0, 0));
    });
}

#[test]
fn wait_empty_completes_once_everything_is_acked() {
    common::with_server(|url| async move {
        let q = queue(&url, "wait-empty", config()).await;
        tokio::time::timeout(PATIENCE, q.wait_empty())
            .await
            .expect("an empty queue is empty");
        for i in 0..5u8 {
            q.push(vec![i]).await.expect("push");
        }
        let mut held = Vec::new();
        for _ in 0..5 {
            held.push(receive(&q).await);
        }
        let waiter = {
            let q = q.clone();
            tokio::spawn(async move { tokio::time::timeout(PATIENCE, q.wait_empty()).await })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !waiter.is_finished(),
            "empty while five items are in flight"
        );
        for d in held {
            d.ack().await.expect("ack");
        }
        waiter
            .await
            .expect("task")
            .expect("wait_empty completes once everything is acked");
    });
}

#[test]
fn another_processs_push_wakes_a_waiting_receiver() {
    common::with_server(|url| async move {
        // Polling once a minute: only the notification can wake the receiver in time.
        let name = common::unique("notify");
        let slow_poll = || options().poll_interval(PATIENCE * 4);
        let process = || common::open_bytes(&url, name.to_string(), config(), slow_poll());
        let (a, b): (PgQueue<Vec<u8>>, PgQueue<Vec<u8>>) = (process().await, process().await);
        let waiter = tokio::spawn(async move { b.receive_timeout(PATIENCE).await });
        // Let B look, find nothing and go to sleep (and its LISTEN start).
        tokio::time::sleep(Duration::from_secs(1)).await;
        let id = a.push(b"wake up".to_vec()).await.expect("push");
        // Within PATIENCE (15 s), a quarter of the poll interval: woken, not polled.
        let d = waiter
            .await
            .expect("task")
            .expect("woken by the notification");
        assert_eq!(d.id(), id);
        d.ack().await.expect("ack");
    });
}
