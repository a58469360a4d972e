//! Everything of `leaseq-async` a tokio user needs (all but the simulator's types) is
//! reachable from this crate: this file compiles only if it is.

use std::time::Duration;

#[allow(unused_imports)]
use leaseq_tokio::{PoolExt, TokioClock, TokioRuntime, TokioTask, TokioTimer};
leaseq_test_kit::use_shared_reexports!(leaseq_tokio);

/// The re-exported `MemoryStore` is a `Store`, with the re-exported ticket and wait.
fn is_store<
    S: Store<u32, Runtime = TokioRuntime, Ticket = MemoryTicket, Waiting = MemoryWaiting>,
>() {
}

#[tokio::test(start_paused = true)]
async fn the_new_items_are_the_shared_layers() {
    assert_eq!(DEFAULT_MAX_LEASE, Duration::from_secs(3600));
    let q: LeaseQueue<u32> = LeaseQueue::new(Config::new(Duration::from_secs(1))).unwrap();
    is_store::<MemoryStore<u32, TokioRuntime>>();
    let waited = q.receive_timeout(Duration::from_millis(5)).await;
    assert_eq!(waited.err(), Some(ReceiveError::Timeout));
}

#[tokio::test(start_paused = true)]
async fn the_memory_store_keeps_no_record_of_finished_jobs() {
    let q: LeaseQueue<u32> = LeaseQueue::new(Config::new(Duration::from_secs(1))).unwrap();
    q.push(1).await.unwrap();
    q.receive().await.unwrap().ack().await.unwrap();
    assert!(q.history(HistoryQuery::first(10)).await.unwrap().is_empty());
}
