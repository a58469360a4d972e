//! Three OS processes push inside their own transactions, which commit, roll back, or fail
//! and roll back at random (seeded: `LEASEQ_TX_SEED`, printed), while a pool in the parent
//! handles the queue: what the pool runs is exactly what was committed, each once.
//!
//! Each child records every id it pushed in a table of the test's, in the same transaction
//! as the push: the record exists if and only if the push committed. The test binary
//! re-executes itself for the children (`tx_child`, as `kill9.rs` does).

use leaseq_test_kit::child;
use leaseq_test_kit::pg as common;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leaseq_async::{Config, Push};
use leaseq_postgres::PgQueue;
use leaseq_test_kit::rng::Rng;

const CHILDREN: u64 = 3;
const TRANSACTIONS: u64 = 40;

/// An item the pool ran: its id and payload.
type Run = (u64, Vec<u8>);

fn config() -> Config {
    Config::new(Duration::from_secs(30))
}

/// A child: `TRANSACTIONS` transactions of 1 to 4 pushes each, every pushed id recorded in
/// `table` in the same transaction; then commit (6 in 10), roll back (3 in 10), or fail a
/// statement and roll back (1 in 10). Child 1 runs on deadpool's transactions, the others
/// on tokio-postgres's.
#[test]
fn tx_child() {
    let Some([url, schema, queue, table, child, seed]) = child::vars(
        "LEASEQ_TX_",
        ["URL", "SCHEMA", "QUEUE", "TABLE", "CHILD", "CHILD_SEED"],
    ) else {
        return;
    };
    let child: u64 = child.parse().expect("child");
    let mut rng = Rng(seed.parse().expect("seed"));
    common::runtime().block_on(async {
        // The parent's schema (this process's `common::SCHEMA` would be its own).
        let q: PgQueue<Vec<u8>> = common::open(
            &url,
            queue,
            config(),
            leaseq_postgres::BytesCodec,
            common::options().schema(schema),
        )
        .await;
        let record = format!("INSERT INTO {table} (id, payload) VALUES ($1, $2)");
        let manager = deadpool_postgres::Manager::new(
            common::plain(&url).parse().expect("config"),
            tokio_postgres::NoTls,
        );
        let pool = deadpool_postgres::Pool::builder(manager)
            .max_size(1)
            .build()
            .expect("pool");
        let mut plain = common::sql(&url).await;
        for t in 0..TRANSACTIONS {
            let items: Vec<Vec<u8>> = (0..1 + rng.below(4))
                .map(|i| format!("{child}/{t}/{i}").into_bytes())
                .collect();
            let batch = rng.below(2) == 0;
            let ending = rng.below(10);
            // The same steps on either library's transaction.
            macro_rules! run {
                ($tx:expr) => {{
                    let tx = $tx;
                    let ids = if batch {
                        q.store()
                            .push_batch_in(&tx, items.clone(), Push::new())
                            .await
                            .expect("push_batch_in")
                    } else {
                        let mut ids = Vec::new();
                        for item in &items {
                            let id = q.store().push_in(&tx, item.clone(), Push::new()).await;
                            ids.push(id.expect("push_in"));
                        }
                        ids
                    };
                    for (id, item) in ids.iter().zip(&items) {
                        tx.execute(&record, &[&(id.get() as i64), item])
                            .await
                            .expect("record");
                    }
                    match ending {
                        0..=5 => tx.commit().await.expect("commit"),
                        6..=8 => tx.rollback().await.expect("rollback"),
                        _ => {
                            tx.batch_execute("SELECT 1/0").await.expect_err("fails");
                            tx.rollback().await.expect("rollback");
                        }
                    }
                }};
            }
            if child == 1 {
                let mut object = pool.get().await.expect("connection");
                run!(object.transaction().await.expect("begin"));
            } else {
                run!(plain.transaction().await.expect("begin"));
            }
            tokio::time::sleep(Duration::from_millis(rng.below(20))).await;
        }
    });
}

#[test]
fn three_processes_pushing_in_transactions_that_roll_back_deliver_exactly_the_committed() {
    let Some(url) = common::server() else { return };
    let seed: u64 = std::env::var("LEASEQ_TX_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    eprintln!("tx_procs: seed {seed} (LEASEQ_TX_SEED)");
    common::runtime().block_on(async {
        let name = common::unique("txprocs");
        let table = format!("{}.\"committed-{name}\"", common::SCHEMA);
        // The queue's open creates the test's schema, where the record table goes.
        let q = common::process(&url, &name, config()).await;
        let db = common::sql(&url).await;
        db.batch_execute(&format!(
            "CREATE TABLE {table} (id bigint PRIMARY KEY, payload bytea NOT NULL)"
        ))
        .await
        .expect("the record table");
        let ran: Arc<Mutex<Vec<Run>>> = Arc::default();
        let pool = leaseq_tokio::Pool::builder(q.clone()).workers(4).spawn({
            let ran = ran.clone();
            move |job: leaseq_async::Job<Vec<u8>>| {
                ran.lock().unwrap().push((job.id.get(), job.item.clone()));
                async { Ok(()) }
            }
        });

        let exe = std::env::current_exe().expect("the test binary");
        let mut children: Vec<_> = (0..CHILDREN)
            .map(|child| {
                Command::new(&exe)
                    .args(["--exact", "tx_child", "--test-threads=1", "--nocapture"])
                    .env("LEASEQ_TX_URL", &url)
                    .env("LEASEQ_TX_SCHEMA", common::SCHEMA.name())
                    .env("LEASEQ_TX_QUEUE", &name)
                    .env("LEASEQ_TX_TABLE", &table)
                    .env("LEASEQ_TX_CHILD", child.to_string())
                    .env("LEASEQ_TX_CHILD_SEED", (seed * 100 + child).to_string())
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("spawn a child")
            })
            .collect();
        let until = Instant::now() + Duration::from_secs(120);
        for (i, child) in children.iter_mut().enumerate() {
            common::wait_success(child, &format!("child {i}"), until).await;
        }

        let committed: BTreeMap<u64, Vec<u8>> = db
            .query(&format!("SELECT id, payload FROM {table}"), &[])
            .await
            .expect("the records")
            .iter()
            .map(|r| (r.get::<_, i64>(0) as u64, r.get(1)))
            .collect();
        let pushed = CHILDREN * TRANSACTIONS;
        assert!(
            !committed.is_empty() && (committed.len() as u64) < pushed * 4,
            "some committed, some rolled back: {} rows",
            committed.len()
        );
        let until = Instant::now() + common::PATIENCE;
        while ran.lock().unwrap().len() < committed.len() && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::timeout(common::PATIENCE, q.wait_empty())
            .await
            .expect("the queue empties");
        // Anything more (a rolled-back push, a second run) would have come by now.
        tokio::time::sleep(Duration::from_millis(500)).await;
        pool.shutdown(Duration::from_secs(5)).await;

        let ran = ran.lock().unwrap().clone();
        let mut once: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
        for (id, payload) in &ran {
            assert!(
                once.insert(*id, payload.clone()).is_none(),
                "item {id} ran twice"
            );
        }
        let missing: Vec<_> = committed
            .keys()
            .filter(|id| !once.contains_key(id))
            .collect();
        let extra: Vec<_> = once
            .keys()
            .filter(|id| !committed.contains_key(id))
            .collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "committed but not run: {missing:?}; run but never committed: {extra:?}"
        );
        assert_eq!(once, committed, "the payloads as pushed");
        eprintln!(
            "tx_procs: {} items committed and run once each (seed {seed})",
            committed.len()
        );
        db.batch_execute(&format!("DROP TABLE {table}"))
            .await
            .expect("drop the record table");
    });
}
