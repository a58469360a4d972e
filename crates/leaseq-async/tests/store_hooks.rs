//! The public hooks other stores build on: `LeaseSignal`, `LeaseLost`'s constructors,
//! `Delivery::into_ticket` and `Delivery::store` (virtual time).

use std::time::Duration;

use futures::FutureExt;
use leaseq_async::{
    Acked, Config, Extended, LeaseLost, LeaseQueue, LeaseSignal, Runtime, SimRuntime, Store,
};
use leaseq_test_kit::sim;

const SECOND: Duration = Duration::from_secs(1);

/// `LeaseLost::lost` is lost already and completes on its first poll.
#[test]
fn lost_is_lost_and_completes_at_once() {
    let lost = LeaseLost::lost();
    assert!(lost.is_lost());
    assert_eq!(lost.now_or_never(), Some(()));
}

/// `LeaseLost::from_signal` waits for its signal: pending until a heartbeat marks it lost,
/// then woken and complete.
#[test]
fn from_signal_completes_once_marked_lost() {
    sim::run(|rt| async move {
        let signal = LeaseSignal::new();
        let mut lost = LeaseLost::from_signal(signal.clone());
        assert!(!lost.is_lost() && !signal.is_lost());
        assert_eq!((&mut lost).now_or_never(), None);
        let start = rt.now();
        let marker = rt.spawn(Box::pin({
            let (rt, signal) = (rt.clone(), signal.clone());
            async move {
                rt.sleep_until(start.saturating_add(SECOND)).await;
                signal.mark_lost();
            }
        }));
        (&mut lost).await;
        assert_eq!(rt.now(), start.saturating_add(SECOND));
        assert!(lost.is_lost() && signal.is_lost());
        // Marking again does nothing more; a new future on the signal is done at once.
        signal.mark_lost();
        assert_eq!(LeaseLost::from_signal(signal).now_or_never(), Some(()));
        marker.await;
    });
}

/// `LeaseLost::at_deadline` is lost at its instant on the runtime's clock.
#[test]
fn at_deadline_completes_at_the_deadline() {
    sim::run(|rt| async move {
        let at = rt.now().saturating_add(5 * SECOND);
        let mut lost = LeaseLost::at_deadline(&rt, at);
        assert!(!lost.is_lost());
        (&mut lost).await;
        assert_eq!(rt.now(), at);
        assert!(lost.is_lost());
        assert!(LeaseLost::at_deadline(&rt, at).is_lost());
    });
}

/// `into_ticket` hands the lease to the caller, who settles it through the store: the
/// delivery hands nothing back. A released delivery has no ticket left.
#[test]
fn into_ticket_settles_through_the_store() {
    sim::run(|rt| async move {
        let q: LeaseQueue<u32, SimRuntime> =
            LeaseQueue::with_runtime(rt.clone(), Config::new(5 * SECOND)).unwrap();
        q.try_push(1).unwrap();
        q.try_push(2).unwrap();

        let d = q.receive().await.unwrap();
        let store = d.store().clone();
        let ticket = d
            .into_ticket()
            .expect("an unsettled delivery has its ticket");
        let s = q.stats();
        assert_eq!((s.in_flight, s.redelivered), (1, 0), "nothing handed back");
        assert_eq!(store.ack(ticket).await, Ok(Acked::OnTime));

        let mut d = q.receive().await.unwrap();
        assert!(matches!(
            d.extend(Duration::ZERO).await,
            Ok(Extended::Released(_))
        ));
        assert!(d.into_ticket().is_none());
        let s = q.stats();
        assert_eq!((s.acked, s.ready, s.in_flight), (1, 1, 0));
    });
}
