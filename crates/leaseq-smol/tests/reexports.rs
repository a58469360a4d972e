//! Everything of `leaseq-async` a smol user needs (all but the simulator's types) is
//! reachable from this crate: this file compiles only if it is.

use std::time::Duration;

#[allow(unused_imports)]
use leaseq_smol::{SmolRuntime, SmolTask, SmolTimer};
leaseq_test_kit::use_shared_reexports!(leaseq_smol);

/// The re-exported `MemoryStore` is a `Store`, with the re-exported ticket and wait.
fn is_store<
    S: Store<u32, Runtime = SmolRuntime, Ticket = MemoryTicket, Waiting = MemoryWaiting>,
>() {
}

#[test]
fn the_new_items_are_the_shared_layers() {
    assert_eq!(DEFAULT_MAX_LEASE, Duration::from_secs(3600));
    smol::block_on(async {
        let config = Config::new(Duration::from_secs(1));
        let q: LeaseQueue<u32> = LeaseQueue::with_runtime(SmolRuntime::global(), config).unwrap();
        is_store::<MemoryStore<u32, SmolRuntime>>();
        let waited = q.receive_timeout(Duration::from_millis(5)).await;
        assert_eq!(waited.err(), Some(ReceiveError::Timeout));
    });
}
