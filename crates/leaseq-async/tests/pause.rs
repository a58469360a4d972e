//! Pause and resume on the memory store, on virtual time: a running pool stops taking items
//! at the pause (the item it holds finishes and is acked), pushes while paused are kept,
//! waiting receivers sleep until the resume (the virtual clock moves on, so nothing spins),
//! and the resume wakes them; every handle sees one flag.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use leaseq_async::{Config, Job, LeaseQueue, Pool, Runtime, SimRuntime};

fn sim<F: Future<Output = ()>>(test: impl FnOnce(SimRuntime) -> F) {
    let rt = SimRuntime::new();
    rt.block_on(test(rt.clone()));
}

fn queue(rt: &SimRuntime) -> LeaseQueue<u32, SimRuntime> {
    LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(30))).unwrap()
}

async fn sleep(rt: &SimRuntime, d: Duration) {
    rt.sleep_until(rt.now().saturating_add(d)).await;
}

#[test]
fn pause_stops_a_running_pool_and_resume_restarts_it() {
    sim(|rt| async move {
        let q = queue(&rt);
        let done = Arc::new(AtomicU32::new(0));
        let pool = Pool::builder(q.clone()).workers(3).spawn({
            let (rt, done) = (rt.clone(), done.clone());
            move |_job: Job<u32>| {
                let (rt, done) = (rt.clone(), done.clone());
                async move {
                    sleep(&rt, Duration::from_secs(1)).await;
                    done.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                }
            }
        });
        for n in 0..30 {
            q.push(n).await.unwrap();
        }
        // Three workers, a second per item: 6 done after 2.5 s, 3 more in their hands.
        sleep(&rt, Duration::from_millis(2500)).await;
        assert_eq!(q.pause().await, Ok(true));
        assert_eq!(done.load(Ordering::Relaxed), 6);
        let delivered = q.stats().delivered;
        assert_eq!(delivered, 9);
        // Pushes while paused are kept; nothing more is leased for an hour of virtual time
        // (a spinning worker would keep the virtual clock from moving on).
        for n in 30..40 {
            q.push(n).await.unwrap();
        }
        sleep(&rt, Duration::from_secs(3600)).await;
        let s = q.stats();
        assert!(s.paused);
        assert_eq!(done.load(Ordering::Relaxed), 9, "the leases out finished");
        assert_eq!((s.delivered, s.acked, s.in_flight), (delivered, 9, 0));
        assert_eq!(s.ready, 31, "21 left and the 10 pushed while paused");
        // Another handle sees the flag; resuming from it restarts the pool.
        let other = q.clone();
        assert_eq!(other.resume().await, Ok(true));
        assert_eq!(other.resume().await, Ok(false));
        q.wait_empty().await;
        assert_eq!(done.load(Ordering::Relaxed), 40);
        assert!(!q.stats().paused);
        let report = pool.shutdown(Duration::from_secs(1)).await;
        assert_eq!(report.stats.ok, 40);
    });
}

#[test]
fn a_receiver_waiting_while_paused_is_woken_by_the_resume() {
    sim(|rt| async move {
        let q = queue(&rt);
        q.pause().await.unwrap();
        q.push(7).await.unwrap();
        let resumed_at = std::sync::Mutex::new(None);
        let (got, ()) = futures::future::join(
            async {
                let d = q.receive().await.unwrap();
                let got = (*d.item(), rt.now());
                d.ack().await.unwrap();
                got
            },
            async {
                sleep(&rt, Duration::from_secs(60)).await;
                assert_eq!(q.stats().delivered, 0, "nothing leased while paused");
                *resumed_at.lock().unwrap() = Some(rt.now());
                q.resume().await.unwrap();
            },
        )
        .await;
        assert_eq!(
            got,
            (7, resumed_at.lock().unwrap().unwrap()),
            "woken at the resume"
        );
        assert_eq!(q.stats().acked, 1);
    });
}
