//! A bounded queue's room ledger (`queue_room`, schema step 16, issue 32): far from the
//! bound an insert only adds to the ledger (no count), near it the ledger counts again;
//! with several processes pushing (writer batches, keyed pushes, SQL `push_item`) and
//! acking at once the queue never passes its capacity and the ledger never counts fewer
//! rows than are live, and a producer killed with SIGKILL mid-push leaves it so (the
//! queue fills to exactly its capacity afterwards, no more, no less). A redrive gives back
//! the room it did not use; an older process's `insert_bounded` (step 11's signature)
//! takes room too.

use leaseq_test_kit::child;
use leaseq_test_kit::pg as common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use leaseq_async::{Config, Push};
use leaseq_postgres::PgQueue;

use common::{PATIENCE, SCHEMA};

/// The ledger's row of `queue` (`taken`, `bound`, `cap`) and the queue's live rows, read
/// in one statement (one snapshot), in schema `schema`.
async fn ledger(db: &tokio_postgres::Client, schema: &str, queue: &str) -> (i64, i64, i64, i64) {
    let row = db
        .query_one(
            &format!(
                "SELECT coalesce(r.taken, 0), coalesce(r.bound, 0), coalesce(r.cap, 0),
                        (SELECT count(*) FROM \"{schema}\".items i
                         WHERE i.queue = $1 AND i.state IN (0, 1))
                 FROM (SELECT 1) one LEFT JOIN \"{schema}\".queue_room r ON r.queue = $1"
            ),
            &[&queue],
        )
        .await
        .expect("read the ledger");
    (row.get(0), row.get(1), row.get(2), row.get(3))
}

/// Receives and acks until nothing comes for a second: how many.
async fn drain(q: &PgQueue<Vec<u8>>) -> usize {
    let mut n = 0;
    while let Ok(d) = q.receive_timeout(Duration::from_secs(1)).await {
        d.ack().await.expect("ack");
        n += 1;
    }
    n
}

#[test]
fn far_from_the_bound_an_insert_only_adds_to_the_ledger_and_near_it_counts_again() {
    common::with_server(|url| async move {
        const CAP: usize = 1000;
        let name = common::unique("room-fast");
        let q = common::process(
            &url,
            &name,
            Config::new(Duration::from_secs(30)).with_capacity(CAP),
        )
        .await;
        let db = common::sql(&url).await;
        let schema = SCHEMA.name();
        // The first insert counts (no ledger yet): 0 live, 10 taken, the fast path's
        // bound halfway to the capacity.
        q.push_batch((0..10u8).map(|i| vec![i]).collect::<Vec<_>>())
            .await
            .expect("push");
        assert_eq!(ledger(&db, schema, &name).await, (10, 505, 1000, 10));
        // Acked rows stay taken: the next inserts add to the ledger without counting.
        assert_eq!(drain(&q).await, 10);
        for i in 0..4u8 {
            q.push_batch((0..10u8).map(|j| vec![i, j]).collect::<Vec<_>>())
                .await
                .expect("push");
        }
        assert_eq!(ledger(&db, schema, &name).await, (50, 505, 1000, 40));
        // Past the bound: counted again (40 live + 480 pushed), the bound moved up.
        q.push_batch(
            (0..240u16)
                .map(|j| j.to_be_bytes().to_vec())
                .collect::<Vec<_>>(),
        )
        .await
        .expect("push");
        q.push_batch(
            (240..480u16)
                .map(|j| j.to_be_bytes().to_vec())
                .collect::<Vec<_>>(),
        )
        .await
        .expect("push");
        let (taken, bound, _, live) = ledger(&db, schema, &name).await;
        assert_eq!(live, 520);
        assert_eq!(
            taken, live,
            "counted again once past 505 (50 + 480 without a count)"
        );
        assert!(bound > 505 && bound <= 1000, "bound {bound}");
        assert_eq!(drain(&q).await, 520);
    });
}

#[test]
fn processes_pushing_and_acking_at_once_never_pass_the_bound_nor_the_ledger() {
    common::with_server(|url| async move {
        const CAP: usize = 25;
        const PROCS: usize = 3;
        const BATCHES: usize = 30;
        const SQL_PUSHES: usize = 30;
        const KEYED: usize = 20;
        let total = PROCS * BATCHES * 3 + SQL_PUSHES + KEYED;
        let name = common::unique("room-procs");
        let config = Config::new(Duration::from_secs(30)).with_capacity(CAP);
        let mut procs = Vec::new();
        for _ in 0..PROCS {
            procs.push(common::process(&url, &name, config.clone()).await);
        }
        let schema = SCHEMA.name();
        let mut tasks = Vec::new();
        for (p, q) in procs.iter().enumerate() {
            let q = q.clone();
            tasks.push(tokio::spawn(async move {
                for b in 0..BATCHES {
                    let batch: Vec<_> = (0..3u8).map(|i| vec![p as u8, b as u8, i]).collect();
                    tokio::time::timeout(PATIENCE, q.push_batch(batch))
                        .await
                        .expect("room in time")
                        .expect("push");
                }
            }));
        }
        // Keyed pushes (their own transaction, refused when full: tried again).
        let keyed = procs[0].clone();
        tasks.push(tokio::spawn(async move {
            for k in 0..KEYED {
                let key = format!("k{k}");
                loop {
                    match keyed.try_push_with(vec![9, k as u8], Push::default().key(&key)) {
                        Ok(_) => break,
                        Err(leaseq_async::PushError::Full(_)) => {
                            tokio::time::sleep(Duration::from_millis(5)).await
                        }
                        Err(e) => panic!("keyed push: {e}"),
                    }
                }
            }
        }));
        // SQL pushes (`push_item`, through `push_rows`), refused when full: tried again.
        let sql_url = url.clone();
        let sql_name = name.clone();
        tasks.push(tokio::spawn(async move {
            let db = common::sql(&sql_url).await;
            for i in 0..SQL_PUSHES {
                loop {
                    let r = db
                        .execute(
                            &format!("SELECT \"{schema}\".push_item($1, $2)"),
                            &[&sql_name, &vec![8u8, i as u8]],
                        )
                        .await;
                    match r {
                        Ok(_) => break,
                        Err(e) if e.code().map(|c| c.code()) == Some("53400") => {
                            tokio::time::sleep(Duration::from_millis(5)).await
                        }
                        Err(e) => panic!("push_item: {e}"),
                    }
                }
            }
        }));
        let acked = Arc::new(AtomicUsize::new(0));
        for q in procs.iter().take(2) {
            let (q, acked) = (q.clone(), acked.clone());
            tasks.push(tokio::spawn(async move {
                while acked.load(Ordering::SeqCst) < total {
                    if let Ok(d) = q.receive_timeout(Duration::from_millis(200)).await {
                        d.ack().await.expect("ack");
                        acked.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }));
        }
        let db = common::sql(&url).await;
        let (mut samples, mut most) = (0, 0);
        while acked.load(Ordering::SeqCst) < total {
            let (taken, bound, cap, live) = ledger(&db, schema, &name).await;
            assert!(
                live <= CAP as i64,
                "{live} live rows, over the capacity {CAP}"
            );
            assert!(
                taken >= live,
                "the ledger counts {taken}, {live} rows are live"
            );
            assert!(bound <= cap, "bound {bound} over the capacity {cap}");
            most = most.max(live);
            samples += 1;
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        for t in tasks {
            tokio::time::timeout(PATIENCE, t)
                .await
                .expect("done")
                .expect("no panic");
        }
        assert!(samples > 10);
        let (taken, _, _, live) = ledger(&db, schema, &name).await;
        assert_eq!(live, 0);
        assert!(taken >= 0);
        // Counted again (no room asked): the ledger is the live count exactly.
        db.execute(
            &format!("SELECT \"{schema}\".take_room($1, $2, 0)"),
            &[&name, &(CAP as i64)],
        )
        .await
        .expect("recount");
        assert_eq!(ledger(&db, schema, &name).await.0, 0);
        eprintln!("most live rows seen: {most} of {CAP}");
    });
}

/// The SIGKILLed producer (`LEASEQ_ROOM_*` set by the parent): pushes batches into the
/// bounded queue, saying `PUSHED <n>` after each, until killed.
#[test]
fn room_child() {
    let Some([url, schema, queue]) = child::vars("LEASEQ_ROOM_", ["URL", "SCHEMA", "QUEUE"]) else {
        return;
    };
    common::runtime().block_on(async {
        let q: PgQueue<Vec<u8>> = common::open(
            &url,
            queue,
            Config::new(Duration::from_secs(30)).with_capacity(KILL_CAP),
            leaseq_postgres::BytesCodec,
            common::options().schema(schema),
        )
        .await;
        for n in 0u32.. {
            // Many pushes queued at once: the writer is mid-insert when the kill lands.
            for i in 0..20u32 {
                let _ = q.try_push((n * 20 + i).to_be_bytes().to_vec());
            }
            q.push(n.to_le_bytes().to_vec()).await.expect("push");
            println!("PUSHED {n}");
        }
    });
}

/// The capacity of the queue the killed producer pushes into.
const KILL_CAP: usize = 60;

#[test]
fn a_producer_killed_mid_push_leaves_the_ledger_at_or_above_the_live_rows() {
    common::with_server(|url| async move {
        let name = common::unique("room-kill9");
        let config = Config::new(Duration::from_secs(30)).with_capacity(KILL_CAP);
        let q = common::process(&url, &name, config).await;
        let schema = SCHEMA.name();
        let env = [
            ("LEASEQ_ROOM_URL", url.clone()),
            ("LEASEQ_ROOM_SCHEMA", schema.to_string()),
            ("LEASEQ_ROOM_QUEUE", name.clone()),
        ];
        // Drained meanwhile, so the child keeps inserting (and taking room) when killed.
        let killed = Arc::new(AtomicUsize::new(0));
        let draining = tokio::spawn({
            let (q, killed) = (q.clone(), killed.clone());
            async move {
                while killed.load(Ordering::SeqCst) == 0 {
                    if let Ok(d) = q.receive_timeout(Duration::from_millis(50)).await {
                        d.ack().await.expect("ack");
                    }
                }
            }
        });
        tokio::task::spawn_blocking(move || child::kill_at("room_child", &env, "PUSHED 8"))
            .await
            .expect("the child ran and was killed");
        killed.store(1, Ordering::SeqCst);
        draining.await.expect("drained");
        let db = common::sql(&url).await;
        // Whatever the killed connection's last statement did (rolled back, or committed
        // whole by the server), every snapshot has the ledger at or above the live rows.
        let (taken, _, _, live) = ledger(&db, schema, &name).await;
        assert!(live <= KILL_CAP as i64, "{live} live rows over {KILL_CAP}");
        assert!(
            taken >= live,
            "the ledger counts {taken}, {live} rows are live"
        );
        // Everything taken away: exactly the capacity goes in again, and not one more.
        drain(&q).await;
        q.push_batch(
            (0..KILL_CAP as u16)
                .map(|i| i.to_be_bytes().to_vec())
                .collect::<Vec<_>>(),
        )
        .await
        .expect("room for the whole capacity");
        assert_eq!(ledger(&db, schema, &name).await.3, KILL_CAP as i64);
        let over = db
            .execute(
                &format!("SELECT \"{schema}\".push_item($1, $2)"),
                &[&name, &vec![1u8]],
            )
            .await
            .expect_err("one more is refused");
        assert_eq!(over.code().map(|c| c.code()), Some("53400"), "{over}");
        assert_eq!(drain(&q).await, KILL_CAP);
    });
}

#[test]
fn an_older_process_insert_takes_room_from_the_ledger_too() {
    common::with_server(|url| async move {
        let name = common::unique("room-old");
        let q = common::process(
            &url,
            &name,
            Config::new(Duration::from_secs(30)).with_capacity(3),
        )
        .await;
        let db = common::sql(&url).await;
        let schema = SCHEMA.name();
        // Step 11's signature (eight arguments), as a process of that version calls it.
        let old = format!(
            "SELECT live, room FROM \"{schema}\".insert_bounded($1, $2, $3, $4, $5, $6, $7, $8)"
        );
        let base = (1_i64 << 40) + 1;
        let call = |n: i64| {
            let ids: Vec<i64> = (0..n).map(|i| base + i).collect();
            let priorities = vec![0_i16; n as usize];
            let delays = vec![0_i64; n as usize];
            let ttls: Vec<Option<i64>> = vec![None; n as usize];
            let payloads: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8]).collect();
            (ids, priorities, delays, ttls, payloads)
        };
        let (ids, pr, de, tt, pa) = call(5);
        let row = db
            .query_one(
                &old,
                &[&name, &ids, &pr, &de, &tt, &pa, &"leaseq.none", &3_i64],
            )
            .await
            .expect("the old signature");
        assert_eq!((row.get::<_, i64>(0), row.get::<_, i32>(1)), (0, 3));
        assert_eq!(ledger(&db, schema, &name).await, (3, 3, 3, 3));
        assert_eq!(drain(&q).await, 3);
    });
}

#[test]
fn a_redrive_into_a_bounded_queue_takes_only_the_room_it_used() {
    common::with_server(|url| async move {
        let name = common::unique("room-redrive");
        let q = common::process(
            &url,
            &name,
            Config::new(Duration::from_secs(30))
                .with_capacity(10)
                .with_max_attempts(1),
        )
        .await;
        let db = common::sql(&url).await;
        let schema = SCHEMA.name();
        q.push_batch(vec![vec![1u8], vec![2], vec![3]])
            .await
            .expect("push");
        let d = common::receive(&q).await;
        d.dead_letter("to redrive").await.expect("dead letter");
        // Counted again (no room asked): 2 live rows.
        db.execute(
            &format!("SELECT \"{schema}\".take_room($1, 10, 0)"),
            &[&name],
        )
        .await
        .expect("recount");
        assert_eq!(ledger(&db, schema, &name).await.0, 2);
        // All the room (8) taken for the redrive, 7 given back: one more row taken.
        assert_eq!(
            q.redrive_matching(leaseq_async::DeadFilter::all()).await,
            Ok(1)
        );
        assert_eq!(ledger(&db, schema, &name).await, (3, 3 + 7 / 2, 10, 3));
        assert_eq!(drain(&q).await, 3);
    });
}
