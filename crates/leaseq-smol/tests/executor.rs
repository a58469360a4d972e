//! `SmolRuntime::global()` runs on smol's own executor (`smol::spawn`): a queue on it works
//! from nothing but `smol::block_on`, its driver redelivering a lease that runs out with no
//! executor driven by the test. `SmolRuntime::with_executor` runs on the caller's executor.
//! Real time: each test fails after 20 s rather than hang.

use std::future::Future;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use leaseq_smol::{Config, LeaseQueue, Pool, Runtime, SmolRuntime};

/// `future`, or a panic if it has not finished after 20 s.
async fn bounded<T>(future: impl Future<Output = T>) -> T {
    smol::future::or(future, async {
        smol::Timer::after(Duration::from_secs(20)).await;
        panic!("hung: not finished in 20 s");
    })
    .await
}

/// The name of the thread a task spawned by `spawn` runs on.
async fn thread_of(
    spawn: impl FnOnce(std::pin::Pin<Box<dyn Future<Output = ()> + Send>>),
) -> String {
    let (tx, rx) = smol::channel::bounded(1);
    spawn(Box::pin(async move {
        let name = thread::current().name().unwrap_or("").to_string();
        let _ = tx.send(name).await;
    }));
    rx.recv().await.unwrap()
}

#[test]
fn global_spawns_on_smols_executor() {
    smol::block_on(bounded(async {
        let rt = SmolRuntime::global();
        let ours = thread_of(|f| drop(rt.spawn(f))).await;
        let smols = thread_of(|f| smol::spawn(f).detach()).await;
        // smol names its executor threads "smol-1", "smol-2", ... (`SMOL_THREADS` of them).
        assert!(ours.starts_with("smol-"), "leaseq's task ran on {ours:?}");
        assert!(smols.starts_with("smol-"), "smol's task ran on {smols:?}");
    }));
}

#[test]
fn global_queue_redelivers_from_block_on_alone() {
    let rt = SmolRuntime::global();
    smol::block_on(bounded(async {
        let visibility = Duration::from_millis(50);
        let q: LeaseQueue<u32> = LeaseQueue::with_runtime(rt, Config::new(visibility)).unwrap();
        q.push(7).await.unwrap();
        let first = q.receive().await.unwrap();
        // Held, not acked: only the queue's driver, on smol's executor, brings it back.
        let start = Instant::now();
        let again = q.receive().await.unwrap();
        assert!(start.elapsed() >= visibility - Duration::from_millis(1));
        assert_eq!((*again.item(), again.attempt()), (7, 2));
        assert!(first.ack().await.is_err(), "a stale receipt acked");
        again.ack().await.unwrap();
        let stats = q.stats();
        assert_eq!((stats.acked, stats.redelivered), (1, 1));
    }));
}

#[test]
fn global_pool_works_from_block_on() {
    let rt = SmolRuntime::global();
    smol::block_on(bounded(async {
        let q: LeaseQueue<u32> =
            LeaseQueue::with_runtime(rt, Config::new(Duration::from_secs(5))).unwrap();
        for i in 0..100 {
            q.push(i).await.unwrap();
        }
        let pool = Pool::builder(q.clone())
            .workers(4)
            .spawn(|_job| async move {
                smol::Timer::after(Duration::from_micros(100)).await;
                Ok(())
            });
        q.wait_empty().await;
        let report = pool.shutdown(Duration::from_secs(1)).await;
        assert_eq!(report.stats.ok, 100);
        assert_eq!(report.handed_back, 0);
        assert_eq!(q.stats().acked, 100);
    }));
}

#[test]
fn with_executor_runs_on_the_callers_executor() {
    let ex = Arc::new(smol::Executor::new());
    let rt = SmolRuntime::with_executor(ex.clone());
    let here = thread::current().name().unwrap_or("").to_string();
    smol::block_on(ex.run(bounded(async {
        let ours = thread_of(|f| drop(rt.spawn(f))).await;
        assert_eq!(
            ours, here,
            "with_executor's task ran off the executor's one thread"
        );
        let visibility = Duration::from_millis(50);
        let q: LeaseQueue<u32> = LeaseQueue::with_runtime(rt, Config::new(visibility)).unwrap();
        q.push(7).await.unwrap();
        let _held = q.receive().await.unwrap();
        let again = q.receive().await.unwrap();
        assert_eq!(again.attempt(), 2);
        again.ack().await.unwrap();
    })));
}
