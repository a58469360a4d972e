//! What users of flume or tokio's channels expect: a push that waits for room (and loses
//! nothing when cancelled), a try_push that refuses at once, try_receive, receive_timeout,
//! blocking push and receive for plain threads, batch acks that say which were accepted,
//! and handles that are Send + Sync. Virtual time where time matters.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use leaseq_async::Push;
use leaseq_async::{
    Config, Delivery, Job, LeaseLost, LeaseQueue, PushError, ReceiveError, Runtime, SimRuntime,
};
use leaseq_test_kit::sim;

type Q = LeaseQueue<u32, SimRuntime>;

fn bounded(rt: &SimRuntime, capacity: usize) -> Q {
    let config = Config::new(Duration::from_secs(10)).with_capacity(capacity);
    LeaseQueue::with_runtime(rt.clone(), config).unwrap()
}

fn poll_once<F: Future>(fut: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

/// A push into a full queue waits; dropped while waiting it has queued nothing; a waiting
/// push completes at the moment room appears.
#[test]
fn push_waits_for_room_and_is_cancel_safe() {
    sim::run(|rt| async move {
        let q = bounded(&rt, 1);
        q.push(1).await.unwrap();
        match q.try_push(2) {
            Err(PushError::Full(item)) => assert_eq!(item, 2, "handed back"),
            other => panic!("{other:?}"),
        }
        {
            let mut waiting = pin!(q.push(3));
            assert!(poll_once(waiting.as_mut()).is_pending());
        } // dropped while waiting
        assert_eq!((q.stats().pushed, q.stats().ready), (1, 1));

        // A push that waits, and an ack 2 s later that makes room.
        let pusher = rt.spawn(Box::pin({
            let (q, rt) = (q.clone(), rt.clone());
            async move {
                let id = q.push(4).await.unwrap();
                assert_eq!(rt.now().as_duration(), Duration::from_secs(2));
                assert_eq!(id.get(), 1);
            }
        }));
        let d = q.receive().await.unwrap();
        sim::sleep(&rt, Duration::from_secs(2)).await;
        d.ack().await.unwrap();
        pusher.await;
        assert_eq!(q.try_receive().map(|d| *d.item()), Some(4));
    });
}

/// try_receive never waits; receive_timeout gives up after exactly its timeout, and tells a
/// closed queue apart.
#[test]
fn try_receive_and_receive_timeout() {
    sim::run(|rt| async move {
        let q: Q =
            LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(1))).unwrap();
        assert!(q.try_receive().is_none());
        let start = rt.now();
        let waited = q.receive_timeout(Duration::from_millis(250)).await;
        assert_eq!(waited.err(), Some(ReceiveError::Timeout));
        assert_eq!(
            rt.now().saturating_duration_since(start),
            Duration::from_millis(250)
        );
        q.try_push(7).unwrap();
        let d = q.try_receive().expect("visible now");
        assert_eq!(*d.item(), 7);
        d.ack().await.unwrap();
        q.try_push_with(8, Push::new().delay(Duration::from_millis(100)))
            .unwrap();
        let d = q.receive_timeout(Duration::from_secs(1)).await.unwrap();
        assert_eq!(*d.item(), 8);
        assert_eq!(
            rt.now().saturating_duration_since(start),
            Duration::from_millis(350)
        );
        q.close();
        assert_eq!(
            q.receive_timeout(Duration::from_secs(1)).await.err(),
            Some(ReceiveError::Closed)
        );
    });
}

/// Plain threads push and receive with the blocking calls: a producer blocked on a full
/// queue goes on when a consumer thread settles an item. (No runtime needs to run for that:
/// the wake-ups are the queue's own.)
#[test]
fn blocking_push_and_receive_from_plain_threads() {
    let rt = SimRuntime::new();
    let q = rt.block_on({
        let rt = rt.clone();
        async move { bounded(&rt, 2) }
    });
    let producer = std::thread::spawn({
        let q = q.clone();
        move || {
            for n in 0..50 {
                q.push_blocking(n).unwrap();
            }
        }
    });
    let mut got = Vec::new();
    while got.len() < 50 {
        let d = q.receive_blocking().expect("open");
        got.push(*d.item());
        futures::executor::block_on(d.ack()).unwrap();
    }
    producer.join().unwrap();
    assert_eq!(got, (0..50).collect::<Vec<_>>(), "one producer: FIFO");
    assert_eq!(q.stats().acked, 50);
}

/// A batch ack says which deliveries were accepted, and which were stale and why.
#[test]
fn ack_batch_names_the_accepted() {
    sim::run(|rt| async move {
        let q: Q =
            LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(1))).unwrap();
        let ids: Vec<_> = (0..3).map(|n| q.try_push(n).unwrap()).collect();
        let mut ds = q.receive_batch(3).await;
        // The third lease runs out and goes to someone else: its ack is stale.
        ds[2].extend(Duration::from_millis(1)).await.unwrap();
        sim::sleep(&rt, Duration::from_millis(2)).await;
        let again = q.receive().await.unwrap();
        let report = q.ack_batch(ds).await;
        assert_eq!(report.accepted_ids(), &ids[..2]);
        assert_eq!(report.stale().len(), 1);
        assert_eq!(report.stale()[0].0, ids[2]);
        again.ack().await.unwrap();
    });
}

fn send_sync<X: Send + Sync>() {}

/// Handles, deliveries, jobs and the lease-lost future can cross threads and be shared.
#[test]
fn public_handles_are_send_and_sync() {
    send_sync::<Q>();
    send_sync::<Delivery<u32, SimRuntime>>();
    send_sync::<Job<u32>>();
    send_sync::<LeaseLost>();
}
