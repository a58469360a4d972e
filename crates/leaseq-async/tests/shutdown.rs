//! Shutdown that costs no attempt (issue 30), on virtual time: a pool that begins to stop
//! tells every running handler (`Job::stopping`, `Job::is_stopping`); a handler still
//! running at the end of the grace is cut off and its item put back uncounted, its
//! checkpoint kept, never dead-lettered because of a deploy; a handler that returns within
//! the grace settles as usual (an error then is a real, counted failure), unless it is
//! `JobError::stopped()`, which puts the item back uncounted at once; a dropped pool puts
//! back the same way; a `Consumer`'s holders see its stop and put back.
//!
//! Every queue here allows one attempt: a stop that counted one would dead-letter the item
//! (as the code before this did, reason "dropped").

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::{select, Either};
use leaseq_async::{
    CheckpointError, Config, Job, JobError, LeaseQueue, MessageId, Page, Pool, Runtime, SimRuntime,
    Timestamp,
};
use leaseq_test_kit::sim::{self, sleep};

/// A queue whose items get one attempt: a counted stop dead-letters them.
fn queue(rt: &SimRuntime) -> LeaseQueue<u32, SimRuntime> {
    let config = Config::new(Duration::from_secs(30)).with_max_attempts(1);
    LeaseQueue::with_runtime(rt.clone(), config).unwrap()
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// Pushes an item to `q` and starts a pool on it whose handler checkpoints `mark`, then
/// sleeps an hour (past any grace); returns after a second, the checkpoint made.
async fn checkpoint_and_hang(
    rt: &SimRuntime,
    q: &LeaseQueue<u32, SimRuntime>,
    mark: &'static [u8],
) -> (MessageId, Pool<u32, SimRuntime>) {
    let id = q.push(1).await.unwrap();
    let pool = Pool::builder(q.clone()).spawn({
        let rt = rt.clone();
        move |mut job: Job<u32>| {
            let rt = rt.clone();
            async move {
                job.checkpoint(mark.to_vec()).await?;
                sleep(&rt, secs(3600)).await;
                Ok(())
            }
        }
    });
    sleep(rt, secs(1)).await;
    (id, pool)
}

/// The item is back, visible at once, on its first attempt, with `progress` as its
/// checkpoint; nothing failed or died.
async fn back_uncounted(q: &LeaseQueue<u32, SimRuntime>, id: MessageId, progress: &[u8]) {
    let s = q.stats();
    assert_eq!((s.dead, s.nacks, s.put_back), (0, 0, 1), "{s:?}");
    let d = q.try_receive().expect("visible at once");
    assert_eq!(d.id(), id);
    assert_eq!(d.attempt(), 1, "the stop cost no attempt");
    assert_eq!(
        d.progress().map(|p| p.as_bytes().to_vec()),
        Some(progress.to_vec())
    );
    assert!(q.dead_letters(Page::ALL).await.unwrap().is_empty());
}

/// A long job that watches `stopping()`: on the stop it records a checkpoint at once
/// (saying where it was and that it saw the stop), then carries on; the grace ends first,
/// and the item goes back uncounted with that checkpoint.
#[test]
fn a_job_that_watches_stopping_checkpoints_and_is_put_back_uncounted() {
    sim::run(|rt| async move {
        let q = queue(&rt);
        let id = q.push(10).await.unwrap();
        let saw_stop_at = Arc::new(Mutex::new(None::<Timestamp>));
        let pool = Pool::builder(q.clone()).workers(2).spawn({
            let (rt, saw_stop_at) = (rt.clone(), saw_stop_at.clone());
            move |mut job: Job<u32>| {
                let (rt, saw_stop_at) = (rt.clone(), saw_stop_at.clone());
                async move {
                    let mut stopping = job.stopping();
                    let mut step = 0u8;
                    while u32::from(step) < job.item {
                        let work = std::pin::pin!(sleep(&rt, secs(1)));
                        match select(work, &mut stopping).await {
                            Either::Left(_) => {
                                step += 1;
                                job.checkpoint(vec![step]).await?;
                            }
                            Either::Right(_) => {
                                *saw_stop_at.lock().unwrap() = Some(rt.now());
                                job.checkpoint(vec![step, b'S']).await?;
                                // Carries on past the grace: the work is 10 s.
                                sleep(&rt, secs(3600)).await;
                            }
                        }
                    }
                    Ok(())
                }
            }
        });
        sleep(&rt, Duration::from_millis(3500)).await;
        let stop_at = rt.now();
        let report = pool.shutdown(secs(2)).await;
        assert_eq!(*saw_stop_at.lock().unwrap(), Some(stop_at), "told at once");
        assert_eq!(report.put_back, vec![id]);
        assert_eq!(report.handed_back, 1);
        assert_eq!(report.took, secs(2), "cut off at the end of the grace");
        let s = &report.stats;
        assert_eq!((s.ok, s.failed, s.timed_out, s.panicked), (0, 0, 0, 0));
        back_uncounted(&q, id, &[3, b'S']).await;
    });
}

/// A job that watches `stopping()`, checkpoints and returns `JobError::stopped()` hands its
/// item back at once: put back uncounted with that checkpoint, listed in the report, not an
/// outcome of the pool's, and the shutdown does not wait out the grace (on the old code
/// there was no such error: any error returned counted the attempt, and with one attempt
/// dead-lettered the item). With idle workers beside it, none takes the item put back
/// (on the pipelined path too, a fetcher leasing ahead).
#[test]
fn a_job_that_returns_stopped_is_put_back_at_once_uncounted() {
    for prefetch in [None, Some(4)] {
        returns_stopped(prefetch);
    }
}

fn returns_stopped(prefetch: Option<usize>) {
    sim::run(|rt| async move {
        let q = queue(&rt);
        let id = q.push(10).await.unwrap();
        let mut builder = Pool::builder(q.clone()).workers(4);
        if let Some(n) = prefetch {
            builder = builder.prefetch(n);
        }
        let pool = builder.spawn({
            let rt = rt.clone();
            move |mut job: Job<u32>| {
                let rt = rt.clone();
                async move {
                    let mut stopping = job.stopping();
                    let mut step = 0u8;
                    while u32::from(step) < job.item {
                        let work = std::pin::pin!(sleep(&rt, secs(1)));
                        if let Either::Right(_) = select(work, &mut stopping).await {
                            job.checkpoint(vec![step, b'S']).await?;
                            return Err(JobError::stopped());
                        }
                        step += 1;
                        job.checkpoint(vec![step]).await?;
                    }
                    Ok(())
                }
            }
        });
        sleep(&rt, Duration::from_millis(3500)).await;
        let report = pool.shutdown(secs(60)).await;
        assert_eq!(report.took, Duration::ZERO, "no grace waited out");
        assert_eq!(report.put_back, vec![id]);
        assert_eq!(report.handed_back, 0, "nobody was cut off");
        let s = &report.stats;
        assert_eq!((s.ok, s.failed, s.permanent), (0, 0, 0), "not an outcome");
        back_uncounted(&q, id, &[3, b'S']).await;
    });
}

/// `JobError::stopped()` returned while the pool is not stopping is an ordinary failure:
/// counted, retried after the backoff, dead-lettered at the last attempt, so a handler that
/// returns it by mistake cannot loop on an item.
#[test]
fn stopped_returned_while_the_pool_runs_is_a_counted_failure() {
    sim::run(|rt| async move {
        let config = Config::new(secs(30)).with_max_attempts(2);
        let q = LeaseQueue::with_runtime(rt.clone(), config).unwrap();
        let id = q.push(1u32).await.unwrap();
        let pool = Pool::builder(q.clone())
            .spawn(|_job: Job<u32>| async move { Err(JobError::stopped()) });
        q.wait_empty().await;
        let report = pool.shutdown(secs(1)).await;
        assert!(report.put_back.is_empty());
        assert_eq!(report.stats.failed, 2);
        let s = &report.stats.queue;
        assert_eq!((s.put_back, s.redelivered, s.dead), (0, 1, 1), "{s:?}");
        let dead = q.dead_letters(Page::ALL).await.unwrap();
        assert_eq!((dead[0].id, dead[0].attempts), (id, 2));
        assert_eq!(
            dead[0].last_error.as_deref(),
            Some(JobError::stopped().message())
        );
    });
}

/// A job that ignores the stop is cut off at the end of the grace: put back, its attempt
/// not counted, its last checkpoint kept (on the old code: handed back as "dropped", its
/// only attempt spent, dead-lettered).
#[test]
fn a_job_that_ignores_the_stop_is_cut_off_and_put_back_with_its_checkpoint() {
    sim::run(|rt| async move {
        let q = queue(&rt);
        let (id, pool) = checkpoint_and_hang(&rt, &q, b"half").await;
        let report = pool.shutdown(secs(5)).await;
        assert_eq!(report.put_back, vec![id]);
        assert_eq!(
            report.handed_back_items,
            vec![id],
            "the watchdog saw it too"
        );
        assert_eq!(report.stats.queue.dead, 0);
        back_uncounted(&q, id, b"half").await;
    });
}

/// Within the grace a handler settles as usual: `Ok` acks; an error returned because of the
/// stop is a real failure, counted (here, the only attempt: dead-lettered).
#[test]
fn a_handler_that_returns_within_the_grace_settles_as_usual() {
    sim::run(|rt| async move {
        let q = queue(&rt);
        let ok = q.push(0).await.unwrap();
        let err = q.push(1).await.unwrap();
        let pool = Pool::builder(q.clone()).workers(2).spawn({
            let rt = rt.clone();
            move |job: Job<u32>| {
                let rt = rt.clone();
                async move {
                    job.stopping().await;
                    assert!(job.is_stopping());
                    // Wraps up within the grace.
                    sleep(&rt, Duration::from_millis(500)).await;
                    match job.item {
                        0 => Ok(()),
                        _ => Err(JobError::retry("interrupted")),
                    }
                }
            }
        });
        sleep(&rt, secs(1)).await;
        let report = pool.shutdown(secs(1)).await;
        assert!(report.put_back.is_empty());
        assert_eq!(report.handed_back, 0);
        assert_eq!(report.took, Duration::from_millis(500));
        let s = &report.stats;
        assert_eq!((s.ok, s.failed), (1, 1));
        assert_eq!((s.queue.acked, s.queue.dead, s.queue.put_back), (1, 1, 0));
        let dead = q.dead_letters(Page::ALL).await.unwrap();
        assert_eq!(dead.len(), 1);
        assert_eq!(dead[0].id, err);
        assert_eq!(dead[0].last_error.as_deref(), Some("interrupted"));
        assert_ne!(dead[0].id, ok);
    });
}

/// A blocking handler sees the stop with `is_stopping()`; cut off (the simulation's clock
/// does not wait for its thread), its item is put back uncounted while the thread runs on
/// as an overrun, and a checkpoint it makes afterwards is refused (the lease is over).
#[test]
fn a_blocking_handler_sees_is_stopping_and_is_put_back_when_cut_off() {
    sim::run(|rt| async move {
        let q = queue(&rt);
        let id = q.push(1).await.unwrap();
        let started = Arc::new(AtomicBool::new(false));
        let saw_stop = Arc::new(AtomicBool::new(false));
        let release = Arc::new(AtomicBool::new(false));
        let late = Arc::new(Mutex::new(None::<Result<(), CheckpointError>>));
        let pool = Pool::builder(q.clone()).spawn_blocking({
            let (started, saw_stop) = (started.clone(), saw_stop.clone());
            let (release, late) = (release.clone(), late.clone());
            move |job: &Job<u32>| {
                job.checkpoint_blocking(b"step 1".to_vec()).unwrap();
                started.store(true, Ordering::Release);
                wait_for(|| job.is_stopping());
                saw_stop.store(true, Ordering::Release);
                wait_for(|| release.load(Ordering::Acquire));
                *late.lock().unwrap() = Some(job.checkpoint_blocking(b"step 2".to_vec()));
                Ok(())
            }
        });
        while !started.load(Ordering::Acquire) {
            sleep(&rt, Duration::from_millis(1)).await;
            std::thread::sleep(Duration::from_millis(1));
        }
        let report = pool.shutdown(secs(10)).await;
        assert_eq!(report.put_back, vec![id]);
        assert_eq!(report.stats.blocking_overruns, 1);
        wait_for(|| saw_stop.load(Ordering::Acquire));
        back_uncounted(&q, id, b"step 1").await;
        release.store(true, Ordering::Release);
        wait_for(|| late.lock().unwrap().is_some());
        assert!(
            matches!(*late.lock().unwrap(), Some(Err(CheckpointError::Stale(_)))),
            "{:?}",
            late.lock().unwrap()
        );
    });
}

/// Waits on a real thread for `done` (a minute at most: a hang fails the test).
fn wait_for(done: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(60), "waited a minute");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A pool dropped without `shutdown` stops at once, with no grace, the same way: the items
/// its workers held go back uncounted, checkpoints kept.
#[test]
fn a_dropped_pool_puts_back_uncounted() {
    sim::run(|rt| async move {
        let q = queue(&rt);
        let (id, pool) = checkpoint_and_hang(&rt, &q, b"some").await;
        drop(pool);
        // The aborted worker's future is dropped when the executor next runs.
        sleep(&rt, Duration::from_millis(1)).await;
        back_uncounted(&q, id, b"some").await;
    });
}

/// A worker aborted as a crash drill is not a stop: its item is handed back, counted.
#[test]
fn an_aborted_worker_is_a_crash_and_counts() {
    sim::run(|rt| async move {
        let config = Config::new(secs(30)).with_max_attempts(3);
        let q = LeaseQueue::with_runtime(rt.clone(), config).unwrap();
        q.push(1u32).await.unwrap();
        let runs = Arc::new(AtomicU32::new(0));
        let pool = Pool::builder(q.clone()).workers(1).spawn({
            let (rt, runs) = (rt.clone(), runs.clone());
            move |_job: Job<u32>| {
                let rt = rt.clone();
                runs.fetch_add(1, Ordering::AcqRel);
                async move {
                    sleep(&rt, secs(3600)).await;
                    Ok(())
                }
            }
        });
        sleep(&rt, secs(1)).await;
        pool.abort_worker(0);
        sleep(&rt, secs(1)).await;
        assert_eq!(
            runs.load(Ordering::Acquire),
            2,
            "taken again by the new worker"
        );
        let s = q.stats();
        assert_eq!((s.redelivered, s.put_back), (1, 0), "{s:?}");
        let report = pool.shutdown(Duration::ZERO).await;
        assert_eq!(report.put_back.len(), 1, "the stop itself is uncounted");
    });
}

/// A `Consumer`'s holders see its stop (`stopping()`), and what they put back costs no
/// attempt; a delivery merely dropped would count.
#[test]
fn a_consumers_holders_see_its_stop_and_put_back_uncounted() {
    sim::run(|rt| async move {
        let q = queue(&rt);
        for n in 0..4 {
            q.push(n).await.unwrap();
        }
        let consumer = q.consumer(2);
        let held = consumer.receive().await.unwrap();
        let stopping = consumer.stopping();
        assert!(!stopping.is_stopping());
        let holder = rt.spawn(Box::pin({
            let (rt, stopping) = (rt.clone(), stopping.clone());
            async move {
                let work = std::pin::pin!(sleep(&rt, secs(3600)));
                match select(work, stopping).await {
                    Either::Left(_) => drop(held.ack().await),
                    Either::Right(_) => held.put_back(),
                }
            }
        }));
        sleep(&rt, secs(1)).await;
        consumer.stop().await;
        assert!(stopping.is_stopping());
        holder.await;
        let s = q.stats();
        assert_eq!((s.dead, s.nacks, s.ready), (0, 0, 4), "{s:?}");
        let again = q.try_receive_batch(10);
        assert_eq!(again.len(), 4);
        assert!(again.iter().all(|d| d.attempt() == 1));

        // A dropped consumer stops too.
        drop(again);
        let consumer = q.consumer(1);
        let stopping = consumer.stopping();
        drop(consumer);
        stopping.await;
    });
}
