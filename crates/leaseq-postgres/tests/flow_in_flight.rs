//! A kind or partition limit set while items of that kind or partition are in flight
//! counts them from the start (issue 32): the change records the leases in flight with
//! their kind and partition (`flow.rs`), whether they were claimed by the plain claim (no
//! flow settings yet) or through a queue limit's slots (which keep no kind or partition).

use leaseq_test_kit::pg as common;

use std::time::Duration;

use leaseq_async::{Config, Push};
use leaseq_core::{FlowKey, LimitScope};
use leaseq_postgres::{BytesCodec, PgDelivery, PgQueue};

async fn open(url: &str, prefix: &str) -> PgQueue<Vec<u8>> {
    let options = common::options().poll_interval(Duration::from_millis(50));
    let config = Config::new(Duration::from_secs(30));
    common::open(url, common::unique(prefix), config, BytesCodec, options).await
}

async fn push(q: &PgQueue<Vec<u8>>, name: &str, kind: &str, part: &str) {
    let push = Push::new().kind(kind).partition(part);
    q.push_with(name.as_bytes().to_vec(), push)
        .await
        .expect("push");
}

async fn next(q: &PgQueue<Vec<u8>>) -> (String, PgDelivery<Vec<u8>>) {
    let d = common::receive(q).await;
    (String::from_utf8(d.item().clone()).expect("utf-8"), d)
}

/// Nothing comes within half a second.
async fn nothing(q: &PgQueue<Vec<u8>>) {
    if let Ok(d) = q.receive_timeout(Duration::from_millis(500)).await {
        panic!("{:?} came", String::from_utf8_lossy(d.item()));
    }
}

/// `a1` (kind a) and `p1` (partition p) leased, then limits of 1 on kind a and partition
/// p: `a2` and `p2` wait for them, `z` does not.
async fn limits_count_the_leases_in_flight(q: &PgQueue<Vec<u8>>) {
    push(q, "a1", "a", "x").await;
    push(q, "p1", "b", "p").await;
    let (first, d1) = next(q).await;
    let (second, d2) = next(q).await;
    assert_eq!((first.as_str(), second.as_str()), ("a1", "p1"));
    push(q, "a2", "a", "y").await;
    push(q, "p2", "c", "p").await;
    push(q, "z", "z", "z").await;
    q.set_limit(LimitScope::Kind(FlowKey::named("a")), Some(1))
        .await
        .expect("kind limit");
    q.set_limit(LimitScope::Partition(FlowKey::named("p")), Some(1))
        .await
        .expect("partition limit");
    let (item, z) = next(q).await;
    assert_eq!(item, "z", "a2 and p2 wait for the leases in flight");
    z.ack().await.expect("ack");
    nothing(q).await;
    assert_eq!(q.flow_waiting().await.expect("waiting").on_limits, 2);
    d1.ack().await.expect("ack");
    let (item, d) = next(q).await;
    assert_eq!(item, "a2", "kind a's place freed");
    d.ack().await.expect("ack");
    nothing(q).await;
    d2.ack().await.expect("ack");
    let (item, d) = next(q).await;
    assert_eq!(item, "p2", "partition p's place freed");
    d.ack().await.expect("ack");
}

#[test]
fn limits_set_after_plain_claims_count_the_leases_in_flight() {
    common::with_server(|url| async move {
        let q = open(&url, "flowinfl").await;
        limits_count_the_leases_in_flight(&q).await;
    });
}

#[test]
fn limits_set_after_claims_through_slots_count_the_leases_in_flight() {
    common::with_server(|url| async move {
        let q = open(&url, "flowinfs").await;
        // A queue limit alone: the claims go through its slots, which keep leases only.
        q.set_limit(LimitScope::Queue, Some(10))
            .await
            .expect("queue limit");
        limits_count_the_leases_in_flight(&q).await;
    });
}
