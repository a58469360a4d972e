//! Exact late acks on tokio's paused clock.

use std::time::Duration;

use leaseq_tokio::{Acked, Config, LeaseQueue};

#[tokio::test(start_paused = true)]
async fn ack_after_the_deadline_is_late_by_the_exact_time() {
    let q: LeaseQueue<u32> = LeaseQueue::new(Config::new(Duration::from_secs(1))).unwrap();
    q.try_push(1).unwrap();
    let d = q.receive().await.unwrap();
    tokio::time::sleep(Duration::from_millis(1010)).await;
    assert_eq!(q.stats().lease_expired, 1);
    assert_eq!(
        d.ack().await,
        Ok(Acked::LateUnclaimed {
            late_by: Duration::from_millis(10)
        })
    );
}
