//! Smoke tests of the tokio adapter on paused time.

use std::time::Duration;

use leaseq_tokio::{Config, ItemTimeout, JobError, LeaseQueue, Pool, Reason};

#[tokio::test(start_paused = true)]
async fn lease_expires_and_comes_back() {
    let q: LeaseQueue<u32> = LeaseQueue::new(Config::new(Duration::from_secs(1))).unwrap();
    q.try_push(7).unwrap();
    let d = q.receive().await.unwrap();
    let start = tokio::time::Instant::now();
    let again = q.receive().await.unwrap();
    // The visibility (1 s), then the default backoff (1 s, less up to half by the jitter).
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(1500) && waited <= Duration::from_secs(2),
        "{waited:?}"
    );
    assert_eq!((*again.item(), again.attempt()), (7, 2));
    assert!(d.ack().await.is_err());
    again.ack().await.unwrap();
    assert_eq!(q.stats().late_acks_stale, 1);
}

#[tokio::test(start_paused = true)]
async fn pool_times_out_and_dead_letters() {
    let config = Config::new(Duration::from_millis(500)).with_max_attempts(3);
    let q: LeaseQueue<u32> = LeaseQueue::new(config).unwrap();
    for i in 0..20 {
        q.try_push(i).unwrap();
    }
    let pool = Pool::builder(q.clone())
        .workers(4)
        .item_timeout(ItemTimeout::Fixed(Duration::from_secs(2)))
        .heartbeat(true)
        .spawn(|job| async move {
            match job.item {
                3 => std::future::pending().await,
                5 => tokio::time::sleep(Duration::from_millis(1500)).await,
                9 => return Err(JobError::permanent("bad")),
                _ => tokio::time::sleep(Duration::from_millis(10)).await,
            }
            Ok(())
        });
    q.wait_empty().await;
    let report = pool.shutdown(Duration::from_secs(1)).await;
    let s = report.stats;
    assert_eq!(s.ok, 18, "{s:#?}");
    assert_eq!(s.timed_out, 3);
    assert_eq!(s.permanent, 1);
    assert_eq!(s.queue.late_acks_stale, 0);
    assert_eq!(s.queue.redelivered, 2);
    let dead = q.store().take_dead_letters();
    assert_eq!(dead.len(), 2);
    assert_eq!(dead[0].reason, Reason::TimedOut);
    assert_eq!(dead[0].attempts, 3);
    assert_eq!(dead[1].reason, Reason::Rejected);
}
