//! Regression tests for the tokio adapter's faults 5, 6 and 7 of issue #12.
//!
//! Each test runs its tokio runtime on a thread of its own and waits for the result with a
//! bound of 20 s of real time, so that a hang fails the test instead of stalling the suite.
//! That bound is the only real time here: what the tests assert is measured on tokio's
//! paused (virtual) clock, except for fault 7, which is about threads, not time.

use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::pin;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Duration;

use leaseq_tokio::{Backoff, Config, LeaseQueue, Runtime, TokioRuntime};
use tokio::time::Instant;

/// Runs `f` on a thread of its own and returns what it returns, or fails if it panics or has
/// not finished after 20 s of real time (the thread is then left behind, hung).
fn guarded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::Builder::new()
        .name(what.into())
        .spawn(move || {
            let _ = tx.send(panic::catch_unwind(AssertUnwindSafe(f)));
        })
        .unwrap();
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(Ok(value)) => value,
        Ok(Err(panic)) => panic::resume_unwind(panic),
        Err(RecvTimeoutError::Timeout) => panic!("hung: {what} did not finish in 20 s"),
        Err(RecvTimeoutError::Disconnected) => panic!("{what}: thread lost"),
    }
}

/// A current-thread runtime whose clock starts paused (tokio's `start_paused`).
fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

/// Keeps a far timer pending for as long as the runtime runs: tokio's auto-advance jumps
/// the paused clock to the earliest pending timer whenever the runtime idles, so a sleep
/// that is not on tokio's timer is overtaken by this one (as by any heartbeat, pool
/// timeout or other queue's lease in a real test).
fn far_timer() {
    tokio::spawn(async {
        loop {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    });
}

/// The smallest executor there is: polls `future` on this thread, parking in between. No
/// tokio context anywhere near it.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        thread::park();
    }
}

const MS: Duration = Duration::from_millis(1);

/// Fault 5: a sleep on a paused clock ends exactly at its deadline in virtual time, also
/// when it begins while the virtual clock still reads about the real time (as at the start
/// of a paused test) and the deadline is less than tokio's 2 ms tail away.
#[test]
fn paused_sleeps_end_exactly_at_their_deadline() {
    guarded("paused sleeps", || {
        paused().block_on(async {
            far_timer();
            let rt = TokioRuntime::current().unwrap();
            for (i, length) in [MS, MS, 3 * MS, MS, 5 * MS, MS, 2 * MS, MS, 1500 * MS, MS]
                .into_iter()
                .cycle()
                .take(20)
                .enumerate()
            {
                let start = Instant::now();
                rt.sleep_until(rt.now().saturating_add(length)).await;
                assert_eq!(start.elapsed(), length, "sleep {i} of {length:?}");
            }
        })
    });
}

/// Fault 5, through a queue: on a paused clock an expired lease is redelivered exactly at
/// the visibility timeout, short or long.
#[test]
fn paused_lease_expiry_redelivers_exactly_at_the_visibility() {
    guarded("paused lease expiry", || {
        paused().block_on(async {
            far_timer();
            for visibility in [MS, 2 * MS, MS, 5000 * MS, MS] {
                // No backoff: the redelivery is timed to the lease's deadline.
                let config = Config::new(visibility).with_backoff(Backoff::None);
                let q: LeaseQueue<u32> = LeaseQueue::new(config).unwrap();
                q.try_push(7).unwrap();
                let first = q.receive().await.unwrap();
                let start = Instant::now();
                let again = q.receive().await.unwrap();
                assert_eq!(start.elapsed(), visibility, "visibility {visibility:?}");
                assert_eq!((*again.item(), again.attempt()), (7, 2));
                assert!(first.ack().await.is_err());
                again.ack().await.unwrap();
            }
        })
    });
}

/// Fault 6: past 30 years on a paused clock, a lease still expires on time, and the reaper
/// sleeps until then instead of spinning (which would starve the test's own sleep).
#[test]
fn sleeps_past_thirty_years_neither_spin_nor_end_early() {
    guarded("sleeps past 30 years", || {
        paused().block_on(async {
            // No backoff: the redelivery is timed to the lease's deadline.
            let config = Config::new(Duration::from_secs(1)).with_backoff(Backoff::None);
            let q: LeaseQueue<u32> = LeaseQueue::new(config).unwrap();
            tokio::time::advance(Duration::from_secs(31 * 365 * 86_400)).await;
            q.try_push(7).unwrap();
            let first = q.receive().await.unwrap();
            let start = Instant::now();
            tokio::time::sleep(10 * MS).await;
            assert_eq!(start.elapsed(), 10 * MS);
            assert!(!first.is_lease_lost());
            let again = q.receive().await.unwrap();
            assert_eq!(start.elapsed(), Duration::from_secs(1));
            assert_eq!((*again.item(), again.attempt()), (7, 2));
            assert!(first.is_lease_lost());
            again.ack().await.unwrap();
        })
    });
}

/// Fault 6, at the adapter: the farthest deadline there is (`Timestamp::MAX`, 584 years
/// after the epoch) is kept, not cut short at 30 years, and sleeps after it still work.
#[test]
fn far_deadlines_are_kept() {
    const YEAR: Duration = Duration::from_secs(365 * 86_400);
    guarded("far deadline", || {
        paused().block_on(async {
            let rt = TokioRuntime::current().unwrap();
            let far = rt.sleep_until(leaseq_tokio::Timestamp::MAX);
            let start = Instant::now();
            assert!(tokio::time::timeout(500 * YEAR, far).await.is_err());
            assert_eq!(start.elapsed(), 500 * YEAR);
            let start = Instant::now();
            rt.sleep_until(rt.now().saturating_add(Duration::from_secs(3600)))
                .await;
            assert_eq!(start.elapsed(), Duration::from_secs(3600));
        })
    });
}

/// Fault 7: a delivery's `lease_lost()` can be awaited on a thread without a tokio context,
/// like `receive` and `ack`.
#[test]
fn lease_lost_completes_outside_a_tokio_context() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let visibility = 50 * MS;
    let q: LeaseQueue<u32> = LeaseQueue::with_runtime(
        TokioRuntime::new(runtime.handle().clone()),
        Config::new(visibility),
    )
    .unwrap();
    q.try_push(7).unwrap();
    let (lost, waited) = guarded("lease_lost off tokio", move || {
        block_on(async move {
            let d = q.receive().await.unwrap();
            let start = std::time::Instant::now();
            d.lease_lost().await;
            (d.is_lease_lost(), start.elapsed())
        })
    });
    assert!(lost);
    assert!(waited < visibility + Duration::from_secs(5), "{waited:?}");
}
