//! Unique keys' windows (`Push::key_window`, issue 32) on Postgres, with the core's meaning:
//! each scenario is run on the memory store (virtual time) and on Postgres (two processes'
//! stores taking turns, the time moved on by setting the rows' and kept keys' times back),
//! and the answers must be the same, step for step, and the ones written here. Then the
//! windows on the other push paths (a batch, `push_in` in the caller's transaction,
//! `push_item` from SQL), on the database's clock, and the upkeep's pruning.

use leaseq_test_kit::pg as common;

use std::collections::HashMap;
use std::time::Duration;

use leaseq_async::core::KeyWindow;
use leaseq_async::{Config, LeaseQueue, MessageId, Push, PushError, Runtime, SimRuntime, Store};

use common::{PATIENCE, SCHEMA};

/// One step of a scenario; items are named by a letter.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// Push item `.0` with key `.1`, held for `.2`; `.3`: `replace_pending`.
    Push(&'static str, &'static str, KeyWindow, bool),
    /// Receive one item (its name is the answer).
    Take,
    Ack(&'static str),
    DeadLetter(&'static str),
    /// Nack (retried after the backoff).
    Nack(&'static str),
    /// Time moves on.
    Advance(Duration),
}
use Step::*;

const MIN: Duration = Duration::from_secs(60);
const fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Runs `steps` on `queues` (taking turns, one per step), `advance` moving the time on:
/// what each step answered, in words.
async fn run<R, S, F, Fut>(
    queues: &[LeaseQueue<Vec<u8>, R, S>],
    mut advance: F,
    steps: &[Step],
) -> Vec<String>
where
    R: Runtime,
    S: Store<Vec<u8>, Runtime = R>,
    F: FnMut(Duration) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut names: HashMap<MessageId, &'static str> = HashMap::new();
    let mut held = HashMap::new();
    let mut out = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let q = &queues[i % queues.len()];
        let said = match *step {
            Push(name, key, window, replace) => {
                let mut push = Push::new().key(key).key_window(window);
                if replace {
                    push = push.replace_pending();
                }
                match q.try_push_with(name.as_bytes().to_vec(), push) {
                    Ok(id) => {
                        names.insert(id, name);
                        format!("{name} in")
                    }
                    Err(PushError::DuplicateKey { existing, .. }) => {
                        format!("{name} held by {}", names.get(&existing).unwrap_or(&"?"))
                    }
                    Err(e) => format!("{name} refused: {e}"),
                }
            }
            Take => match q.receive_timeout(PATIENCE).await {
                Ok(d) => {
                    let name = names.get(&d.id()).copied().unwrap_or("?");
                    held.insert(name, d);
                    format!("took {name}")
                }
                Err(e) => format!("took nothing: {e}"),
            },
            Ack(name) => format!(
                "ack {name}: {:?}",
                held.remove(name).unwrap().ack().await.is_ok()
            ),
            DeadLetter(name) => {
                let d = held.remove(name).unwrap();
                format!("dead {name}: {:?}", d.dead_letter("poison").await.is_ok())
            }
            Nack(name) => {
                let d = held.remove(name).unwrap();
                format!("nack {name}: {:?}", d.nack("again").await.is_ok())
            }
            Advance(d) => {
                advance(d).await;
                format!("+{}s", d.as_secs())
            }
        };
        out.push(said);
    }
    out
}

fn config() -> Config {
    Config::new(Duration::from_secs(3600))
}

/// The memory store's answers, on virtual time.
fn on_memory(steps: &[Step]) -> Vec<String> {
    let rt = SimRuntime::new();
    let q = LeaseQueue::with_runtime(rt.clone(), config()).expect("queue");
    let queues = [q];
    let clock = rt.clone();
    rt.block_on(run(
        &queues,
        |d| {
            clock.advance(d);
            std::future::ready(())
        },
        steps,
    ))
}

/// Postgres's answers: two processes' stores taking turns; the time moved on by setting
/// the queue's times back (visibility, deadlines, periods' ends, kept keys).
async fn on_postgres(url: &str, steps: &[Step]) -> Vec<String> {
    let name = common::unique("key-window");
    let a = common::process(url, &name, config()).await;
    let b = common::process(url, &name, config()).await;
    let db = common::sql(url).await;
    let queues = [a, b];
    run(
        &queues,
        |d| {
            let (db, name) = (&db, &name);
            async move {
                let us = d.as_micros() as i64;
                db.execute(
                    &format!(
                        "UPDATE {SCHEMA}.items SET
                            visible_at = visible_at - $2::bigint * interval '1 microsecond',
                            deadline = deadline - $2::bigint * interval '1 microsecond',
                            key_until = key_until - $2::bigint * interval '1 microsecond'
                         WHERE queue = $1"
                    ),
                    &[name, &us],
                )
                .await
                .expect("move the items' time on");
                db.execute(
                    &format!(
                        "UPDATE {SCHEMA}.gone_keys SET until = until - $2::bigint * interval '1 microsecond'
                         WHERE queue = $1"
                    ),
                    &[name, &us],
                )
                .await
                .expect("move the kept keys' time on");
            }
        },
        steps,
    )
    .await
}

/// Runs `steps` on both stores: the same answers, and `expected`.
fn same_on_both(steps: &[Step], expected: &[&str]) {
    let memory = on_memory(steps);
    assert_eq!(memory, expected, "the memory store");
    let steps = steps.to_vec();
    let expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    common::with_server(move |url| async move {
        let pg = on_postgres(&url, &steps).await;
        assert_eq!(
            pg, expected,
            "Postgres answered otherwise than the memory store"
        );
    });
}

#[test]
fn queued_holds_the_key_while_waiting_and_lets_it_go_once_leased() {
    let q = KeyWindow::Queued;
    same_on_both(
        &[
            Push("a", "k", q, false),
            Push("b", "k", KeyWindow::Live, false),
            Take,
            Push("c", "k", KeyWindow::Live, false),
            Nack("a"),
            Push("d", "k", q, false),
        ],
        &[
            "a in",
            "b held by a",
            "took a",
            "c in",
            "nack a: true",
            "d held by c",
        ],
    );
}

#[test]
fn period_holds_the_key_from_the_push_whatever_the_item_does() {
    let p = KeyWindow::Period(MIN);
    same_on_both(
        &[
            Push("a", "k", p, false),
            Take,
            Ack("a"),
            Push("b", "k", KeyWindow::Live, false),
            Advance(secs(59)),
            Push("c", "k", p, false),
            Advance(secs(1)),
            Push("d", "k", p, false),
            // d stays live past its period: it no longer holds the key.
            Advance(secs(61)),
            Push("e", "k", KeyWindow::Live, false),
            Take,
            Take,
        ],
        &[
            "a in",
            "took a",
            "ack a: true",
            "b held by a",
            "+59s",
            "c held by a",
            "+1s",
            "d in",
            "+61s",
            "e in",
            "took d",
            "took e",
        ],
    );
}

#[test]
fn live_then_holds_the_key_while_live_and_for_the_period_after() {
    let lt = KeyWindow::LiveThen(secs(30));
    same_on_both(
        &[
            Push("a", "k", lt, false),
            Advance(secs(100)),
            Push("b", "k", KeyWindow::Live, false),
            Take,
            Ack("a"),
            Advance(secs(29)),
            Push("c", "k", KeyWindow::Live, false),
            Advance(secs(1)),
            Push("d", "k", lt, false),
            Take,
            DeadLetter("d"),
            Push("e", "k", KeyWindow::Live, false),
            Advance(secs(30)),
            Push("f", "k", KeyWindow::Live, false),
        ],
        &[
            "a in",
            "+100s",
            "b held by a",
            "took a",
            "ack a: true",
            "+29s",
            "c held by a",
            "+1s",
            "d in",
            "took d",
            "dead d: true",
            "e held by d",
            "+30s",
            "f in",
        ],
    );
}

#[test]
fn debounce_replaces_the_waiting_holder_and_restarts_the_window() {
    let p = KeyWindow::Period(MIN);
    same_on_both(
        &[
            Push("a", "k", p, true),
            Advance(secs(50)),
            Push("b", "k", p, true),
            Advance(secs(50)),
            Push("c", "k", KeyWindow::Live, false),
            Take,
            Push("d", "k", p, true),
            Ack("b"),
            Push("e", "k", p, true),
            Advance(secs(10)),
            Push("f", "k", p, true),
        ],
        &[
            "a in",
            "+50s",
            "b in",
            "+50s",
            "c held by b",
            "took b",
            "d held by b",
            "ack b: true",
            "e held by b",
            "+10s",
            "f in",
        ],
    );
}

#[test]
fn live_is_as_before() {
    same_on_both(
        &[
            Push("a", "k", KeyWindow::Live, false),
            Push("b", "k", KeyWindow::Live, true),
            Take,
            Push("c", "k", KeyWindow::Live, true),
            Ack("b"),
            Push("d", "k", KeyWindow::Live, false),
        ],
        &[
            "a in",
            "b in",
            "took b",
            "c held by b",
            "ack b: true",
            "d in",
        ],
    );
}

#[test]
fn a_batch_a_push_in_a_transaction_and_sql_honour_windows() {
    common::with_server(|url| async move {
        let name = common::unique("key-window-paths");
        let q = common::process(&url, &name, config()).await;
        let mut db = common::sql(&url).await;
        let period = |key: &str| Push::new().key(key).key_window(KeyWindow::Period(MIN));
        // A batch: the first item takes the key for the period, the second is refused.
        let mut items = vec![b"1".to_vec(), b"2".to_vec()].into_iter();
        let r = q.store().try_push_batch(&mut items, &period("b"));
        let first = match r {
            Err((ids, PushError::DuplicateKey { existing, .. })) if ids.len() == 1 => {
                assert_eq!(existing, ids[0]);
                existing
            }
            other => panic!("expected one in and a duplicate, got {other:?}"),
        };
        common::receive(&q).await.ack().await.expect("ack");
        assert!(
            common::kept_key(&db, &name, "b").await,
            "the acked item's key is kept"
        );
        // In the caller's transaction: held by the item that left.
        let tx = db.transaction().await.expect("begin");
        let r = q
            .store()
            .push_in(&tx, b"3".to_vec(), Push::new().key("b"))
            .await;
        assert!(
            matches!(&r, Err(leaseq_postgres::TxPushError::DuplicateKey { existing, .. }) if *existing == first),
            "{r:?}"
        );
        // A window given in the transaction: `Queued`, let go once leased.
        let queued = Push::new().key("t").key_window(KeyWindow::Queued);
        let t = q
            .store()
            .push_in(&tx, b"4".to_vec(), queued)
            .await
            .expect("push_in");
        tx.commit().await.expect("commit");
        let r = q.try_push_with(b"5".to_vec(), Push::new().key("t"));
        assert!(
            matches!(&r, Err(PushError::DuplicateKey { existing, .. }) if *existing == t),
            "{r:?}"
        );
        let d = common::receive(&q).await;
        assert_eq!(d.id(), t);
        let six = q
            .try_push_with(b"6".to_vec(), Push::new().key("t"))
            .expect("the leased Queued holder let the key go");
        d.ack().await.expect("ack");
        let d = common::receive(&q).await;
        assert_eq!(d.id(), six);
        d.ack().await.expect("ack");
        // From SQL: `push_item` with a window, and one refused by it.
        let push_item = format!("SELECT {SCHEMA}.push_item($1, '\\x07'::bytea, key => 's', key_window => $2::text, key_period => $3::text::interval)");
        let s: i64 = db
            .query_one(&push_item, &[&name, &"live_then", &"1 hour"])
            .await
            .expect("push_item with a window")
            .get(0);
        let d = common::receive(&q).await;
        assert_eq!(d.id().get() as i64, s);
        d.ack().await.expect("ack");
        let again = db.query_one(&push_item, &[&name, &"live", &"0"]).await;
        let e = again.expect_err("held for an hour after it left");
        assert_eq!(
            e.code(),
            Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION),
            "{e}"
        );
        let bad = db.query_one(&push_item, &[&name, &"forever", &"0"]).await;
        let e = bad.expect_err("an unknown window");
        assert_eq!(
            e.code(),
            Some(&tokio_postgres::error::SqlState::INVALID_PARAMETER_VALUE),
            "{e}"
        );
    });
}

#[test]
fn a_period_ends_on_the_database_clock_and_the_upkeep_prunes_its_key() {
    common::with_server(|url| async move {
        let name = common::unique("key-window-clock");
        let q = common::process(&url, &name, config()).await;
        let db = common::sql(&url).await;
        let throttle = Push::new()
            .key("c")
            .key_window(KeyWindow::Period(Duration::from_secs(2)));
        let a = q
            .try_push_with(b"a".to_vec(), throttle.clone())
            .expect("push");
        common::receive(&q).await.ack().await.expect("ack");
        let held = db
            .query_opt(
                &format!(
                    "SELECT until > clock_timestamp() FROM {SCHEMA}.gone_keys
                     WHERE queue = $1 AND key = 'c'"
                ),
                &[&name],
            )
            .await
            .expect("read the kept key")
            .is_some_and(|r| r.get::<_, bool>(0));
        let r = q.try_push_with(b"b".to_vec(), throttle.clone());
        if held {
            // Still within the period by the database's clock: refused.
            assert!(
                matches!(&r, Err(PushError::DuplicateKey { existing, .. }) if *existing == a),
                "{r:?}"
            );
        }
        // Once the database's clock is past the period's end, the key is free.
        common::eventually("the period ends", || async {
            (!common::kept_key(&db, &name, "c").await).then_some(())
        })
        .await;
        q.try_push_with(b"c".to_vec(), throttle)
            .expect("free after the period");
        q.store().run_upkeep().await.expect("upkeep");
        let left = common::kept_keys(&db, &name).await;
        assert_eq!(left, 0, "the ended key was pruned");
    });
}

#[test]
fn a_push_refused_in_an_open_transaction_does_not_hold_up_the_holder() {
    common::with_server(|url| async move {
        let name = common::unique("key-window-open-tx");
        let q = common::process(&url, &name, config()).await;
        let mut db = common::sql(&url).await;
        let holder = q
            .try_push_with(b"a".to_vec(), Push::new().key("h"))
            .expect("push");
        let d = common::receive(&q).await;
        let tx = db.transaction().await.expect("begin");
        let r = q
            .store()
            .push_in(&tx, b"b".to_vec(), Push::new().key("h"))
            .await;
        assert!(
            matches!(&r, Err(leaseq_postgres::TxPushError::DuplicateKey { existing, .. }) if *existing == holder),
            "{r:?}"
        );
        // The transaction is still open: the holder's ack is not kept waiting on it.
        let acked = tokio::time::timeout(PATIENCE, d.ack()).await;
        assert!(matches!(acked, Ok(Ok(_))), "{acked:?}");
        tx.rollback().await.expect("rollback");
    });
}
