//! A paused-clock test of a crate that has tokio's `test-util` but not leaseq-tokio's: the
//! runtime made by `LeaseQueue::new` sees the pause and reads tokio's clock, so a lease
//! kept alive by the heartbeat for a virtual hour is extended all along, and an unextended
//! one comes back at its exact virtual deadline.

use std::time::Duration;

use leaseq_tokio::{Config, LeaseQueue, Runtime, TokioClock, TokioRuntime};

#[tokio::test(start_paused = true)]
async fn a_paused_clock_is_followed_without_the_feature() {
    if TokioClock::default() == TokioClock::Tokio {
        eprintln!(
            "note: leaseq-tokio/test-util is on in this build (feature unification); run \
             `cargo test -p leaseq-tokio-paused-default` alone to check the detection itself"
        );
    }
    let rt = TokioRuntime::current().unwrap();
    assert_eq!(rt.clock(), TokioClock::Tokio, "the pause was seen");

    let vis = Duration::from_secs(30);
    let q: LeaseQueue<u32> = LeaseQueue::new(Config::new(vis)).unwrap();
    q.push(1).await.unwrap();
    let start = tokio::time::Instant::now();
    let held = q.receive_with_heartbeat().await.unwrap();
    tokio::time::sleep(Duration::from_secs(3600) - Duration::from_secs(1)).await;
    assert!(!held.is_lease_lost());
    let extends = q.stats().extends;
    assert!(
        extends >= 100,
        "a virtual hour of heartbeats, every 10 s: {extends}"
    );
    held.ack().await.unwrap();

    q.push(2).await.unwrap();
    let at = tokio::time::Instant::now();
    let unextended = q.receive().await.unwrap();
    // It comes back once its lease ran out and its backoff passed (1 s, less up to half by
    // the jitter), all in virtual time; its holder is told at the deadline.
    let again = q.receive().await.unwrap();
    assert_eq!((again.id(), again.attempt()), (unextended.id(), 2));
    assert!(unextended.is_lease_lost());
    let waited = tokio::time::Instant::now() - at;
    let backoff = waited - vis;
    assert!(
        waited > vis && backoff >= Duration::from_millis(500) && backoff <= Duration::from_secs(1),
        "{waited:?}"
    );
    assert!(q.runtime().now() >= unextended.deadline());
    again.ack().await.unwrap();
    assert!(start.elapsed() < Duration::from_secs(3600 + 60));
}
