//! Issue 30, "shutdown that costs no attempt", on PostgreSQL: five deploy-style stops
//! (SIGTERM to a real child process, a grace shorter than the work left) of a pool running a
//! 10 s job checkpointed after each of its 100 steps. The job completes from its checkpoint
//! on attempt 1 and is never dead-lettered (its queue allows 3 attempts: counted stops would
//! have killed it at the third), and its handler saw the stop each time (it counts them in
//! its checkpoint). Each stop leaves the row waiting, its attempt not counted, before the
//! child exits (the closed queue's `Closing` waits for the put-back).
//!
//! The child is this test binary run again (`deploy_child`, with `LEASEQ_DEPLOY_*`): it
//! opens the queue, runs the pool until `leaseq_tokio::shutdown_signal()`, closes the queue
//! and exits.
#![cfg(unix)]

use leaseq_test_kit::pg as common;

use std::time::Duration;

use leaseq_async::Config;
use leaseq_postgres::PgQueue;

use common::{sql, unique, SCHEMA};
use leaseq_test_kit::child;
use leaseq_test_kit::deploy::{
    assert_checkpoint, assert_done, assert_stopped, checkpointed_job, GRACE, STOPS,
};

async fn open(url: &str, schema: &str, queue: &str) -> PgQueue<Vec<u8>> {
    let config = Config::new(Duration::from_secs(30)).with_max_attempts(3);
    let options = leaseq_postgres::Options::new()
        .schema(schema)
        .pool_size(4)
        .poll_interval(Duration::from_millis(200));
    common::open_bytes(url, queue.to_string(), config, options).await
}

/// The queue's rows as `(state, attempts, progress)`, read behind the store's back.
async fn rows(url: &str, queue: &str) -> Vec<(i16, i32, Option<Vec<u8>>)> {
    sql(url)
        .await
        .query(
            &format!("SELECT state, attempts, progress FROM {SCHEMA}.items WHERE queue = $1"),
            &[&queue],
        )
        .await
        .expect("read the rows")
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

/// A child: the pool on the queue until SIGTERM.
#[test]
fn deploy_child() {
    let Some([url, schema, queue]) = child::vars("LEASEQ_DEPLOY_", ["URL", "SCHEMA", "QUEUE"])
    else {
        return;
    };
    common::runtime().block_on(async {
        let signal = leaseq_tokio::shutdown_signal();
        let q = open(&url, &schema, &queue).await;
        let pool = leaseq_tokio::Pool::builder(q.clone())
            .workers(1)
            .spawn(|job| checkpointed_job(job, tokio::time::sleep));
        println!("READY");
        let report = pool.shutdown_on(signal, GRACE).await;
        println!("PUTBACK {}", report.put_back.len());
        q.close().await.expect("put-back committed");
    });
}

/// One run of the child: SIGTERM once it has done `steps` more steps (after the checkpoint
/// it resumed from), or once it is done; its output.
fn run(url: &str, queue: &str, stop_after: Option<u8>) -> Vec<String> {
    let env = [
        ("LEASEQ_DEPLOY_URL", url),
        ("LEASEQ_DEPLOY_SCHEMA", SCHEMA.name()),
        ("LEASEQ_DEPLOY_QUEUE", queue),
    ];
    child::run_until_term("deploy_child", &env, stop_after)
}

#[test]
fn five_deploys_cost_a_long_job_no_attempt() {
    let Some(url) = common::server() else { return };
    let queue = unique("deploy");
    let rt = common::runtime();
    rt.block_on(async {
        let q = open(&url, SCHEMA.name(), &queue).await;
        q.push(b"report".to_vec()).await.unwrap();
        q.close().await.unwrap();
    });
    for stop in 1..=STOPS {
        let out = run(&url, &queue, Some(2));
        assert_stopped(&out, stop);
        let rows = rt.block_on(rows(&url, &queue));
        assert_eq!(rows.len(), 1, "stop {stop}: the item is kept");
        let (state, attempts, progress) = &rows[0];
        assert_eq!(
            (*state, *attempts),
            (0, 0),
            "stop {stop}: put back uncounted"
        );
        let progress = progress.as_ref().expect("its checkpoint is kept");
        assert_checkpoint(progress, stop);
    }
    let out = run(&url, &queue, None);
    assert_done(&out);
    assert!(
        rt.block_on(rows(&url, &queue)).is_empty(),
        "acked: no row, no dead letter"
    );
}
