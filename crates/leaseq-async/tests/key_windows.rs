//! Unique keys' windows on the memory store (`Push::key_window`), on virtual time: a
//! throttle holds its key for the period after the push though the item is done, and a
//! debounce (a period with `replace_pending` and a delay) delivers only the last of a burst
//! of pushes, one delay after it.

use std::time::Duration;

use leaseq_async::core::KeyWindow;
use leaseq_async::{Config, Push, PushError, Runtime};
use leaseq_test_kit::sim;

const SEC: Duration = Duration::from_secs(1);

/// A push of `key` that holds it for `period` from the push (`KeyWindow::Period`).
fn held_for(key: &str, period: Duration) -> Push {
    Push::new().key(key).key_window(KeyWindow::Period(period))
}

#[test]
fn a_throttle_holds_the_key_for_its_period_after_the_push() {
    sim::run(|rt| async move {
        let q = sim::queue(&rt, Config::new(60 * SEC));
        let throttle = held_for("digest", 60 * SEC);
        let t0 = rt.now();
        let first = q.try_push_with(1u32, throttle.clone()).unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        rt.sleep_until(t0.saturating_add(59 * SEC)).await;
        let again = q.try_push_with(2u32, throttle.clone());
        assert!(
            matches!(again, Err(PushError::DuplicateKey { existing, .. }) if existing == first)
        );
        rt.sleep_until(t0.saturating_add(60 * SEC)).await;
        q.try_push_with(3u32, throttle).unwrap();
        assert_eq!(*q.receive().await.unwrap().item(), 3);
    });
}

/// A keyed push without a window of its own meets its holder's window at the push's own
/// time, though no other call moved the queue's time on since (a window's end is no timer:
/// the memory store reads the clock for such a push while the queue has windows).
#[test]
fn a_keyed_push_without_a_window_meets_the_holders_window_at_its_own_time() {
    sim::run(|rt| async move {
        let q = sim::queue(&rt, Config::new(60 * SEC));
        let t0 = rt.now();
        let first = q.try_push_with(1u32, held_for("digest", 60 * SEC)).unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        let plain = Push::new().key("digest");
        rt.sleep_until(t0.saturating_add(59 * SEC)).await;
        let again = q.try_push_with(2u32, plain.clone());
        assert!(
            matches!(again, Err(PushError::DuplicateKey { existing, .. }) if existing == first)
        );
        rt.sleep_until(t0.saturating_add(60 * SEC)).await;
        q.try_push_with(3u32, plain).unwrap();
        assert_eq!(*q.receive().await.unwrap().item(), 3);
    });
}

#[test]
fn a_debounce_delivers_the_last_push_of_a_burst_one_delay_after_it() {
    sim::run(|rt| async move {
        let q = sim::queue(&rt, Config::new(60 * SEC));
        let debounce = held_for("reindex", 10 * SEC)
            .replace_pending()
            .delay(5 * SEC);
        let t0 = rt.now();
        for (n, at) in [(1u32, 0u32), (2, 1), (3, 3)] {
            rt.sleep_until(t0.saturating_add(at * SEC)).await;
            q.try_push_with(n, debounce.clone()).unwrap();
        }
        let d = q.receive().await.unwrap();
        assert_eq!(*d.item(), 3);
        assert_eq!(rt.now().saturating_duration_since(t0), 8 * SEC);
        d.ack().await.unwrap();
        assert_eq!(q.stats().replaced, 2);
        assert!(q.try_receive().is_none());
    });
}

/// Flow keys and a key window in one push are not offered: refused, typed, the item back.
#[test]
fn a_key_window_with_flow_keys_is_refused_typed() {
    sim::run(|rt| async move {
        let q = sim::queue(&rt, Config::new(60 * SEC));
        let push = Push::new().key("k").key_window(KeyWindow::Queued);
        let keys = leaseq_async::core::FlowKeys::new().kind(leaseq_async::core::FlowKey::new(1));
        match q.store().try_push_flow(7u32, &push, keys) {
            Err(PushError::Unsupported { item, .. }) => assert_eq!(item, 7),
            other => panic!("expected Unsupported, got {other:?}"),
        }
        assert_eq!(q.stats().pushed, 0);
    });
}
