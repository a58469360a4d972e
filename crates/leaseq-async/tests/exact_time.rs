//! Every result that depends on time uses a clock reading taken at the call: exact late
//! acks, whether or not the queue's driver got to run (virtual time).

use std::time::Duration;

use leaseq_async::{Acked, Config, LeaseQueue, Runtime, SimRuntime};
use leaseq_test_kit::sim;

const VISIBILITY: Duration = Duration::from_secs(1);
const LATE: Duration = Duration::from_millis(10);

fn queue(rt: &SimRuntime) -> LeaseQueue<u32, SimRuntime> {
    LeaseQueue::with_runtime(rt.clone(), Config::new(VISIBILITY)).unwrap()
}

/// The driver ran at the deadline (the lease expired, nobody took the item): the ack 10 ms
/// later is late by exactly 10 ms.
#[test]
fn ack_after_the_deadline_is_late_by_the_exact_time() {
    sim::run(|rt| async move {
        let q = queue(&rt);
        q.try_push(1).unwrap();
        let d = q.receive().await.unwrap();
        let deadline = d.deadline();
        rt.sleep_until(deadline.saturating_add(LATE)).await;
        assert_eq!(
            q.stats().lease_expired,
            1,
            "the driver applied the deadline"
        );
        assert_eq!(d.ack().await, Ok(Acked::LateUnclaimed { late_by: LATE }));
        let s = q.stats();
        assert_eq!((s.acked, s.late_acks_unclaimed), (1, 1));
    });
}

/// The driver never ran (its thread was busy): the ack is still judged on the clock, not
/// on the queue's last-seen time, so it is late, not on time.
#[test]
fn ack_after_the_deadline_is_late_even_when_the_driver_is_starved() {
    sim::run(|rt| async move {
        let q = queue(&rt);
        q.try_push(1).unwrap();
        let d = q.receive().await.unwrap();
        rt.advance(VISIBILITY + LATE);
        assert_eq!(d.ack().await, Ok(Acked::LateUnclaimed { late_by: LATE }));
        assert_eq!(q.stats().late_acks_unclaimed, 1);
    });
}

/// A batch ack is judged on one reading taken at the call, too.
#[test]
fn batch_ack_after_the_deadline_is_late_when_starved() {
    sim::run(|rt| async move {
        let q = queue(&rt);
        q.try_push(1).unwrap();
        q.try_push(2).unwrap();
        let ds = q.receive_batch(2).await;
        rt.advance(VISIBILITY + LATE);
        let report = q.ack_batch(ds).await;
        assert_eq!(report.accepted(), 2);
        let s = q.stats();
        assert_eq!((s.acked, s.late_acks_unclaimed), (2, 2));
    });
}

/// A lease is measured from the moment it is taken: never shorter than the visibility.
#[test]
fn a_lease_is_never_shorter_than_the_visibility() {
    sim::run(|rt| async move {
        let q = queue(&rt);
        q.try_push(1).unwrap();
        rt.advance(Duration::from_secs(5));
        let d = q.receive().await.unwrap();
        assert_eq!(d.deadline(), rt.now().saturating_add(VISIBILITY));
        d.ack().await.unwrap();
    });
}
