//! Issue 30, "shutdown that costs no attempt", on a SQLite file: five deploy-style stops
//! (SIGTERM to a real child process, a grace shorter than the work left) of a pool running a
//! 10 s job checkpointed after each of its 100 steps. The job completes from its checkpoint
//! on attempt 1 and is never dead-lettered (its queue allows 3 attempts: counted stops would
//! have killed it at the third), and its handler saw the stop each time (it counts them in
//! its checkpoint).
//!
//! The child is this test binary run again (`deploy_child`, with `LEASEQ_DEPLOY_FILE`): it
//! opens the file, runs the pool until `leaseq_smol::shutdown_signal()`, then closes the
//! queue (its put-back committed) and exits.
#![cfg(unix)]

mod support;

use std::path::Path;
use std::time::Duration;

use leaseq_async::Config;
use leaseq_sqlite::BytesCodec;
use leaseq_test_kit::child;
use leaseq_test_kit::deploy::{
    assert_checkpoint, assert_done, assert_stopped, checkpointed_job, GRACE, STOPS,
};
use support::{remove, temp, Queue};

fn open(path: &Path) -> Queue {
    let config = Config::new(Duration::from_secs(30)).with_max_attempts(3);
    leaseq_test_kit::sqlite::open(path, config, BytesCodec)
}

/// The one row's `(attempts, leased, dead, progress)`, read behind the store's back.
fn row(path: &Path) -> Option<(i64, i64, i64, Option<Vec<u8>>)> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut st = conn
        .prepare("SELECT attempts, leased, dead, progress FROM items")
        .unwrap();
    let mut rows = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap();
    let first = rows.next().map(Result::unwrap);
    assert!(rows.next().is_none(), "one item");
    first
}

/// A child: the pool on the file until SIGTERM.
#[test]
fn deploy_child() {
    let Some([path]) = child::vars("LEASEQ_DEPLOY_", ["FILE"]) else {
        return;
    };
    let signal = leaseq_smol::shutdown_signal();
    let q = open(Path::new(&path));
    smol::block_on(async {
        let pool = leaseq_async::Pool::builder(q.clone())
            .workers(1)
            .spawn(|job| {
                checkpointed_job(job, |d| async move {
                    smol::Timer::after(d).await;
                })
            });
        println!("READY");
        let report = pool.shutdown_on(signal, GRACE).await;
        println!("PUTBACK {}", report.put_back.len());
        q.close().await.expect("put-back committed");
    });
}

/// One run of the child: SIGTERM once it has done `steps` more steps (after the checkpoint
/// it resumed from), or once it is done; its output.
fn run(path: &Path, stop_after: Option<u8>) -> Vec<String> {
    let env = [("LEASEQ_DEPLOY_FILE", path.as_os_str())];
    child::run_until_term("deploy_child", &env, stop_after)
}

#[test]
fn five_deploys_cost_a_long_job_no_attempt() {
    let path = temp("deploy");
    let q = open(&path);
    smol::block_on(q.push(b"report".to_vec())).unwrap();
    drop(q);
    for stop in 1..=STOPS {
        let out = run(&path, Some(2));
        assert_stopped(&out, stop);
        let (attempts, leased, dead, progress) = row(&path).expect("the item is kept");
        assert_eq!(
            (attempts, leased, dead),
            (0, 0, 0),
            "stop {stop}: put back uncounted"
        );
        let progress = progress.expect("its checkpoint is kept");
        assert_checkpoint(&progress, stop);
    }
    let out = run(&path, None);
    assert_done(&out);
    assert_eq!(row(&path), None, "acked: no row, no dead letter");
    remove(&path);
}
