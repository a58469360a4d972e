//! The fetcher wakes a waiting receiver for every lease it brings, whoever it woke before.
//! On virtual time, with the receivers polled by hand: a receiver woken for the first take
//! and not yet run must not swallow the wake-up of the second take (`notify(n)` counted it
//! and woke nobody new, leaving a lease in the buffer beside a waiting receiver; now
//! `notify(n.additional())`, `fetcher.rs`).

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use leaseq_async::Config;
use leaseq_test_kit::sim;

/// Counts wake-ups.
#[derive(Default)]
struct Wakes(AtomicUsize);

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_second_take_wakes_the_second_receiver_while_the_first_has_not_run() {
    sim::run(|rt| async move {
        let q = sim::queue::<u32>(&rt, Config::new(Duration::from_secs(30)));
        // No lease ahead: the fetcher takes only for receivers waiting.
        let consumer = q.consumer(0);
        let (w1, w2) = (Arc::new(Wakes::default()), Arc::new(Wakes::default()));
        let (waker1, waker2) = (Waker::from(w1.clone()), Waker::from(w2.clone()));
        let mut r1 = Box::pin(consumer.receive());
        let mut r2 = Box::pin(consumer.receive());
        assert!(r1
            .as_mut()
            .poll(&mut Context::from_waker(&waker1))
            .is_pending());
        assert!(r2
            .as_mut()
            .poll(&mut Context::from_waker(&waker2))
            .is_pending());
        let woken = |w: &Wakes| w.0.load(Ordering::SeqCst);
        let step = Duration::from_millis(1);

        q.try_push(1).unwrap();
        let first = sim::within(&rt, Duration::from_secs(1), async {
            while woken(&w1) + woken(&w2) == 0 {
                sim::sleep(&rt, step).await;
            }
        })
        .await;
        assert!(first.is_some(), "a receiver woken for the first item");
        // That receiver is not run: its wake-up stays taken. The second item's take must
        // wake the other one.
        q.try_push(2).unwrap();
        let second = sim::within(&rt, Duration::from_secs(1), async {
            while woken(&w1) + woken(&w2) < 2 {
                sim::sleep(&rt, step).await;
            }
        })
        .await;
        assert!(
            second.is_some(),
            "the second take woke nobody new (w1 {}, w2 {})",
            woken(&w1),
            woken(&w2)
        );
        assert_eq!((woken(&w1), woken(&w2)), (1, 1));
        // Each receiver gets one of the two items.
        let mut got = Vec::new();
        for (r, waker) in [(&mut r1, &waker1), (&mut r2, &waker2)] {
            match r.as_mut().poll(&mut Context::from_waker(waker)) {
                Poll::Ready(Some(d)) => got.push(*d.item()),
                other => panic!("expected an item, got {:?}", other.map(|d| d.is_some())),
            }
        }
        got.sort();
        assert_eq!(got, [1, 2]);
    });
}
