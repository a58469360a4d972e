//! Pipelined work on the durable store, checked on disk after a reopen: a consumer's
//! prefetched leases go back with their attempts taken back in the file too, settles made
//! without waiting (`ack_nowait`, a pool's completer) are all committed by the time the
//! answers or the pool's shutdown say so.

use std::path::{Path, PathBuf};
use std::time::Duration;

use leaseq_async::{Acked, Config, Pool};
use leaseq_smol::SmolRuntime;
use leaseq_sqlite::{PostcardCodec, SqliteQueue};
use leaseq_test_kit::sqlite::{self, remove, temp};

fn queue(path: &Path) -> SqliteQueue<u32, SmolRuntime, PostcardCodec> {
    let config = Config::new(Duration::from_secs(30)).with_max_attempts(3);
    sqlite::open(path, config, PostcardCodec)
}

/// A consumer with a prefetch of 4 hands out one item (acked without waiting) and is
/// stopped: the others it leased ahead go back uncounted, in the file as well: after a
/// reopen every item left comes on its first attempt (a prefetch given back as a counted
/// hand-back would bring them on their second).
#[test]
fn a_consumers_prefetch_goes_back_uncounted_on_disk_too() {
    let path = temp("consumer");
    smol::block_on(async {
        let q = queue(&path);
        for n in 0..10 {
            q.push(n).await.unwrap();
        }
        let consumer = q.consumer(4);
        let d = consumer.receive().await.unwrap();
        assert_eq!(d.attempt(), 1);
        let acked = d.ack_nowait();
        consumer.stop().await;
        assert_eq!(acked.await, Ok(Acked::OnTime));
        // 3 or 4 leased ahead, as the first fetch came before or after the receive waited.
        let put_back = q.stats().put_back;
        assert!((3..=4).contains(&put_back), "{:?}", q.stats());
        q.close().await.unwrap();
    });
    smol::block_on(async {
        let q = queue(&path);
        let rest = q.try_receive_batch(100);
        let attempts: Vec<u32> = rest.iter().map(|d| d.attempt()).collect();
        assert_eq!(attempts, [1; 9], "every item on its first attempt");
        assert!(
            !rest.iter().any(|d| *d.item() == 0),
            "the acked one is gone"
        );
    });
    remove(&path);
}

/// One consumer, one item at a time, every ack made without waiting: all answered `Ok`,
/// and after a reopen the file holds nothing.
#[test]
fn acks_made_without_waiting_are_all_committed_when_answered() {
    let path = temp("nowait");
    smol::block_on(async {
        let q = queue(&path);
        for n in 0..200 {
            q.try_push(n).unwrap();
        }
        q.synced().await.unwrap();
        let consumer = q.consumer(16);
        let mut answers = Vec::new();
        for _ in 0..200 {
            answers.push(consumer.receive().await.unwrap().ack_nowait());
        }
        for a in answers {
            assert_eq!(a.await, Ok(Acked::OnTime));
        }
        consumer.stop().await;
    });
    smol::block_on(async {
        let q = queue(&path);
        let s = q.stats();
        assert_eq!((s.ready, s.delayed, s.restored), (0, 0, 0), "{s:?}");
    });
    remove(&path);
}

/// A pool on the durable store (its fetcher and completer on by default): once its
/// shutdown returned, every ack is on disk.
#[test]
fn a_pools_settles_are_on_disk_when_its_shutdown_returns() {
    let path = temp("pool");
    smol::block_on(async {
        let q = queue(&path);
        for n in 0..300 {
            q.try_push(n).unwrap();
        }
        q.synced().await.unwrap();
        let pool = Pool::builder(q.clone())
            .workers(4)
            .spawn(|_job| async { Ok(()) });
        q.wait_empty().await;
        let report = pool.shutdown(Duration::from_secs(30)).await;
        assert_eq!(report.stats.ok, 300);
        assert_eq!(report.stats.failed_settles + report.stats.stale_settles, 0);
        // Not closed: a crash now (the queue dropped without its close) loses nothing the
        // pool acked.
        std::mem::forget(q);
    });
    let copy = copy_after_crash(&path);
    smol::block_on(async {
        let q = queue(&copy);
        let s = q.stats();
        assert_eq!((s.ready, s.restored), (0, 0), "{s:?}");
    });
    remove(&copy);
    remove(&path);
}

/// A copy of `path`'s files as a crashed process leaves them (the leaked handle in this
/// process still holds the file's lock, so it cannot be reopened itself).
fn copy_after_crash(path: &Path) -> PathBuf {
    let copy = temp("pool-copy");
    for suffix in ["", "-wal"] {
        let from = format!("{}{suffix}", path.display());
        if Path::new(&from).exists() {
            std::fs::copy(&from, format!("{}{suffix}", copy.display())).unwrap();
        }
    }
    copy
}

/// A receive dropped while the commit of its lease's attempt is under way (the writer held
/// up by a hook) gives the lease back uncounted: nobody had the item, so its next delivery,
/// in this run and after a reopen, is its first attempt.
#[cfg(feature = "fault-injection")]
#[test]
fn a_receive_dropped_before_its_commit_costs_no_attempt() {
    use std::future::Future;
    use std::task::{Context, Waker};

    let path = temp("dropped-receive");
    smol::block_on(async {
        let q = queue(&path);
        q.push(7).await.unwrap();
        let (release, held) = std::sync::mpsc::channel::<()>();
        q.store().on_writer(move |_| {
            let _ = held.recv();
        });
        let mut receive = Box::pin(q.receive());
        let polled = receive
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()));
        assert!(polled.is_pending(), "its attempt's commit is held up");
        assert_eq!(q.stats().in_flight, 1);
        drop(receive);
        release.send(()).unwrap();
        let s = q.stats();
        assert_eq!((s.put_back, s.nacks, s.ready), (1, 0, 1), "{s:?}");
        let d = q.receive().await.unwrap();
        assert_eq!(d.attempt(), 1);
        drop(d.into_ticket());
        q.close().await.unwrap();
    });
    smol::block_on(async {
        let q = queue(&path);
        // The lease of the second receive was cut by the "crash": that one counted.
        let d = q.receive().await.unwrap();
        assert_eq!(d.attempt(), 2);
    });
    remove(&path);
}
