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

mod paths;
mod scenarios;
