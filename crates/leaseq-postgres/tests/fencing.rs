//! Fencing across processes (the nats-server #4786 case): two handles opened separately on
//! one queue act as two processes. Worker A's lease runs out, the rescuer puts the item
//! back, worker B takes it with a new fencing token; every settle of A's is then refused
//! with the typed stale result and changes no row. Also: a late ack nobody else claimed is
//! accepted, a heartbeat keeps a slow item's lease, and the max lease takes it anyway.

use leaseq_test_kit::pg as common;

use common::*;

use std::time::{Duration, Instant};

use leaseq_async::{Acked, Config, ReceiptError, ReceiveError, SettleError, Store};
use tokio_postgres::Client;

/// Every column a settle could touch, as text (`None` once the row is gone).
async fn row(c: &Client, id: leaseq_async::MessageId) -> Option<Vec<Option<String>>> {
    let q = format!(
        "SELECT state::text, lease::text, attempts::text, deadline::text, visible_at::text,
                leased_at::text, reason::text, last_error, dead_at::text
         FROM {SCHEMA}.items WHERE id = $1"
    );
    c.query_opt(&q, &[&(id.get() as i64)])
        .await
        .expect("read row")
        .map(|r| (0..9).map(|i| r.get(i)).collect())
}

/// `(state, lease, attempts)` of a row.
/// Visibility 300 ms, the max lease 700 ms.
fn short_max_lease() -> Config {
    Config::new(Duration::from_millis(300)).with_max_lease(Duration::from_millis(700))
}

/// The next delivery of `q`, its lease kept by the heartbeat (within [`PATIENCE`]).
async fn with_heartbeat(
    q: &leaseq_postgres::PgQueue<Vec<u8>>,
) -> leaseq_postgres::PgDelivery<Vec<u8>> {
    match tokio::time::timeout(PATIENCE, q.receive_with_heartbeat()).await {
        Ok(Some(d)) => d,
        other => panic!("no delivery: {other:?}"),
    }
}

/// Pushes `item` to `q` (a [`short_max_lease`] queue) and takes it with the heartbeat on;
/// returns its id and the delivery once its lease is lost at the max lease, heartbeat or
/// not.
async fn lost_at_the_max_lease(
    q: &leaseq_postgres::PgQueue<Vec<u8>>,
    item: &[u8],
) -> (
    leaseq_async::MessageId,
    leaseq_postgres::PgDelivery<Vec<u8>>,
) {
    let id = q.push(item.to_vec()).await.expect("push");
    let d = with_heartbeat(q).await;
    tokio::time::timeout(PATIENCE, d.lease_lost())
        .await
        .expect("the lease is lost at the max lease, heartbeat or not");
    (id, d)
}

fn fence(row: &[Option<String>]) -> (&str, &str, &str) {
    let s = |i: usize| row[i].as_deref().unwrap_or("NULL");
    (s(0), s(1), s(2))
}

#[test]
fn stale_holder_changes_nothing_after_takeover() {
    common::with_server(|url| async move {
        let name = common::unique("fencing");
        // A: short leases and no heartbeat (a worker that hangs). B: long leases.
        let a = process(&url, &name, Config::new(Duration::from_millis(300))).await;
        let b = process(&url, &name, Config::new(Duration::from_secs(60))).await;
        let db = sql(&url).await;
        let mut ids = Vec::new();
        for i in 0..3u8 {
            ids.push(a.push(vec![i]).await.expect("push"));
        }
        let mut held_by_a = Vec::new();
        for _ in 0..3 {
            let d = receive(&a).await;
            assert_eq!(d.attempt(), 1);
            held_by_a.push(d);
        }
        // A hangs; its leases run out; a rescuer puts the items back; B takes them.
        let mut held_by_b = Vec::new();
        for _ in 0..3 {
            let d = receive(&b).await;
            assert_eq!(d.attempt(), 2, "a redelivery counts the expired attempt");
            held_by_b.push(d);
        }
        held_by_a.sort_by_key(|d| d.id());
        held_by_b.sort_by_key(|d| d.id());
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(held_by_b.iter().map(|d| d.id()).collect::<Vec<_>>(), sorted);

        let mut before = Vec::new();
        for d in &held_by_b {
            let r = row(&db, d.id()).await.expect("row of a leased item");
            assert_eq!(fence(&r), ("1", "2", "2"), "leased to B with token 2");
            before.push(r);
        }

        // A wakes up: every settle of its stale leases is refused, typed.
        let mut a_iter = held_by_a.into_iter();
        let (mut a0, a1, a2) = (
            a_iter.next().unwrap(),
            a_iter.next().unwrap(),
            a_iter.next().unwrap(),
        );
        let (id0, id1, id2) = (a0.id(), a1.id(), a2.id());
        assert_eq!(
            a0.extend(Duration::from_secs(60)).await,
            Err(ReceiptError::Redelivered(id0).into())
        );
        assert_eq!(a0.ack().await, Err(ReceiptError::Redelivered(id0).into()));
        assert_eq!(
            a1.nack("late").await,
            Err(ReceiptError::Redelivered(id1).into())
        );
        assert_eq!(
            a2.dead_letter("poison?").await,
            Err(ReceiptError::Redelivered(id2).into())
        );

        for (d, was) in held_by_b.iter().zip(&before) {
            let now = row(&db, d.id()).await.expect("row still there");
            assert_eq!(&now, was, "a stale settle changed the row of {:?}", d.id());
        }
        assert_eq!(a.stats().late_acks_stale, 1);

        // B's settles go through; the first through the store's API, token in hand.
        let mut b_iter = held_by_b.into_iter();
        let ticket = b_iter.next().unwrap().into_ticket().expect("ticket");
        assert_eq!(ticket.fencing_token(), 2);
        assert_eq!(b.store().ack(ticket).await, Ok(Acked::OnTime));
        for d in b_iter {
            assert_eq!(d.ack().await, Ok(Acked::OnTime));
        }
        for id in ids {
            assert_eq!(row(&db, id).await, None, "acked by B: gone");
        }
    });
}

#[test]
fn late_ack_nobody_claimed_is_accepted() {
    common::with_server(|url| async move {
        let q = process(
            &url,
            &common::unique("late-ack"),
            Config::new(Duration::from_millis(300)),
        )
        .await;
        let db = sql(&url).await;
        let id = q.push(b"slow".to_vec()).await.expect("push");
        let d = receive(&q).await;
        // Wait until the rescuer has put it back (waiting again, nobody holds it).
        let start = Instant::now();
        loop {
            let r = row(&db, id).await.expect("row");
            if fence(&r) == ("0", "1", "1") {
                break;
            }
            assert!(start.elapsed() < PATIENCE, "never rescued: {r:?}");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        match d.ack().await {
            Ok(Acked::LateUnclaimed { late_by }) => assert!(late_by > Duration::ZERO),
            other => panic!("expected a late unclaimed ack, got {other:?}"),
        }
        assert_eq!(row(&db, id).await, None, "the late ack removed the item");
        let s = q.stats();
        assert_eq!(s.late_acks_unclaimed, 1);
        assert_eq!(s.acked, 1);
        assert_eq!(s.late_acks_stale, 0);
        assert!(matches!(
            q.receive_timeout(Duration::from_millis(300)).await,
            Err(ReceiveError::Timeout)
        ));
    });
}

#[test]
fn lease_that_ended_in_the_dead_letters_stays_stale_after_a_redrive() {
    common::with_server(|url| async move {
        // One attempt only: the lease running out sends the item to the dead letters.
        let config = Config::new(Duration::from_millis(300)).with_max_attempts(1);
        let q = process(&url, &common::unique("redrive-fence"), config).await;
        let db = sql(&url).await;
        let ids = [
            q.push(b"ack".to_vec()).await.expect("push"),
            q.push(b"bury".to_vec()).await.expect("push"),
        ];
        let (acker, burier) = (receive(&q).await, receive(&q).await);
        common::dead_letters_reach(&q, 2, "the leases never ran out").await;
        for id in ids {
            assert_eq!(q.redrive(id).await, Ok(id));
        }
        let before = [row(&db, ids[0]).await, row(&db, ids[1]).await];
        // The old holders wake up: their leases ended in the dead letters; the redriven
        // items are not theirs to settle.
        let stale = |r: &Result<(), SettleError>| {
            matches!(
                r.as_ref().map_err(SettleError::stale),
                Err(Some(
                    ReceiptError::Redelivered(_) | ReceiptError::DeadLettered(_)
                ))
            )
        };
        let r = acker.ack().await.map(drop);
        assert!(stale(&r), "a stale ack on a redriven item: {r:?}");
        let r = burier.dead_letter("late").await.map(drop);
        assert!(stale(&r), "a stale dead letter on a redriven item: {r:?}");
        assert_eq!(q.stats().late_acks_stale, 1);
        assert_eq!([row(&db, ids[0]).await, row(&db, ids[1]).await], before);
        for _ in 0..2 {
            let d = receive(&q).await;
            assert_eq!(d.attempt(), 1, "a redrive starts the attempts over");
            assert!(d.ack().await.is_ok());
        }
    });
}

#[test]
fn heartbeat_keeps_a_slow_items_lease() {
    common::with_server(|url| async move {
        let name = common::unique("heartbeat");
        let vis = Duration::from_millis(400);
        let q = process(&url, &name, Config::new(vis)).await;
        let other = process(&url, &name, Config::new(vis)).await;
        let id = q.push(b"slow".to_vec()).await.expect("push");
        let d = with_heartbeat(&q).await;
        assert!(d.has_heartbeat());
        assert_eq!(q.store().heartbeats(), 1, "kept alive by this process");
        // The handler runs three times the visibility; another process keeps looking.
        let stolen = other.receive_timeout(vis * 3).await;
        assert!(
            matches!(stolen, Err(ReceiveError::Timeout)),
            "redelivered while the heartbeat held it: {stolen:?}"
        );
        assert!(!d.is_lease_lost());
        assert_eq!(d.attempt(), 1);
        // The row's lease was extended past the first one's end.
        let db = sql(&url).await;
        let extended: bool = db
            .query_one(
                &format!(
                    "SELECT deadline > leased_at + $2 * interval '1 microsecond'
                     FROM {SCHEMA}.items WHERE id = $1"
                ),
                &[&(id.get() as i64), &(vis.as_micros() as f64)],
            )
            .await
            .expect("read the lease")
            .get(0);
        assert!(extended, "the heartbeat extended the lease in the row");
        assert_eq!(d.ack().await, Ok(Acked::OnTime));
        assert_eq!(q.store().heartbeats(), 0, "settled: no longer kept alive");
    });
}

#[test]
fn max_lease_takes_the_item_back_despite_the_heartbeat() {
    common::with_server(|url| async move {
        let q = process(&url, &common::unique("max-lease"), short_max_lease()).await;
        // The handler would run far longer than the max lease: the lease is lost anyway.
        let (id, d) = lost_at_the_max_lease(&q, b"hung").await;
        assert!(d.is_lease_lost());
        let again = receive(&q).await;
        assert_eq!((again.id(), again.attempt()), (id, 2));
        assert_eq!(d.ack().await, Err(ReceiptError::Redelivered(id).into()));
        assert!(again.ack().await.is_ok());
    });
}

#[test]
fn a_stale_holders_settle_leaves_the_next_leases_heartbeat_alone() {
    common::with_server(|url| async move {
        let q = process(&url, &common::unique("stale-beat"), short_max_lease()).await;
        let (id, first) = lost_at_the_max_lease(&q, b"slow").await;
        // The same process takes the item again, with a heartbeat of its own.
        let again = with_heartbeat(&q).await;
        assert_eq!((again.id(), again.attempt()), (id, 2));
        assert_eq!(q.store().heartbeats(), 1);
        // The first holder settles late: refused, and the new lease keeps its heartbeat.
        assert_eq!(first.ack().await, Err(ReceiptError::Redelivered(id).into()));
        assert_eq!(
            q.store().heartbeats(),
            1,
            "the stale settle stopped the heartbeat of the item's next lease"
        );
        assert!(again.ack().await.is_ok());
        assert_eq!(q.store().heartbeats(), 0);
    });
}

/// Moves the lease's start `minutes` back, as if the handler had run that long.
async fn age_lease(db: &Client, id: leaseq_async::MessageId, minutes: i32) {
    let n = db
        .execute(
            &format!(
                "UPDATE {SCHEMA}.items SET leased_at = leased_at - $2 * interval '1 minute'
                 WHERE id = $1"
            ),
            &[&(id.get() as i64), &f64::from(minutes)],
        )
        .await
        .expect("move leased_at");
    assert_eq!(n, 1, "the item's row");
}

#[test]
fn a_heartbeat_kept_lease_ends_at_sixty_minutes_by_default() {
    common::with_server(|url| async move {
        let name = common::unique("default-max-lease");
        let vis = Duration::from_millis(300);
        // No max lease in the config: the default (60 minutes) applies.
        let q = process(&url, &name, Config::new(vis)).await;
        let other = process(&url, &name, Config::new(vis)).await;
        let id = q.push(b"hung".to_vec()).await.expect("push");
        let d = with_heartbeat(&q).await;
        let db = sql(&url).await;
        // 59 minutes in: the heartbeat still keeps it.
        age_lease(&db, id, 59).await;
        let stolen = other.receive_timeout(vis * 3).await;
        assert!(
            matches!(stolen, Err(ReceiveError::Timeout)),
            "redelivered before the cap: {stolen:?}"
        );
        assert!(!d.is_lease_lost());
        // 61 minutes in: the next beat refuses it, and the item comes back.
        age_lease(&db, id, 2).await;
        tokio::time::timeout(PATIENCE, d.lease_lost())
            .await
            .expect("the lease is lost at 60 minutes, heartbeat or not");
        let again = receive(&other).await;
        assert_eq!((again.id(), again.attempt()), (id, 2));
        assert!(again.ack().await.is_ok());
    });
}
