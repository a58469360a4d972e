//! `PoolExt::shutdown_on_cancel`: a pool's shutdown on a tokio-util `CancellationToken`, on
//! tokio's paused clock.

use std::time::Duration;

use leaseq_tokio::{Config, LeaseQueue, Pool, PoolExt};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

#[tokio::test(start_paused = true)]
async fn cancel_shuts_down_after_the_grace_and_hands_back_the_hung_item() {
    // A lease longer than the whole test: nothing comes back but by the shutdown.
    let q: LeaseQueue<u32> = LeaseQueue::new(Config::new(Duration::from_secs(60))).unwrap();
    let id = q.try_push(7).unwrap();
    let pool = Pool::builder(q.clone())
        .workers(2)
        .spawn(|_job| async move {
            std::future::pending::<()>().await;
            Ok(())
        });
    let token = CancellationToken::new();
    let grace = Duration::from_secs(2);
    let start = Instant::now();
    // Spawned: the shutdown future is `Send`.
    let stopped = tokio::spawn(pool.shutdown_on_cancel(token.clone(), grace));
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(
        !stopped.is_finished(),
        "shut down before the token was cancelled"
    );
    token.cancel();
    let report = stopped.await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(5) + grace);
    assert_eq!(report.took, grace);
    assert_eq!(report.handed_back, 1);
    // Listed because the pool's watchdog is on (the default).
    assert_eq!(report.handed_back_items, vec![id]);
    assert_eq!(report.put_back, vec![id]);
    assert_eq!(report.stats.queue.in_flight, 0);
    // Put back: visible at once, the attempt not counted.
    assert_eq!(report.stats.queue.ready, 1);
    let again = q.try_receive().expect("the hung item is back in the queue");
    assert_eq!((*again.item(), again.attempt()), (7, 1));
}

#[tokio::test(start_paused = true)]
async fn a_token_cancelled_before_shuts_down_at_once() {
    let q: LeaseQueue<u32> = LeaseQueue::new(Config::new(Duration::from_secs(1))).unwrap();
    let pool = Pool::builder(q.clone()).spawn(|_job| async move { Ok(()) });
    let token = CancellationToken::new();
    token.cancel();
    let start = Instant::now();
    let report = pool
        .shutdown_on_cancel(token, Duration::from_secs(10))
        .await;
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(report.handed_back, 0);
    assert!(report.handed_back_items.is_empty());
}
