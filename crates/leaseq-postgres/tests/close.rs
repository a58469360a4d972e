//! `close` wakes every waiting receiver, those whose claim is in flight (off the claim
//! board while their round runs) included: workers that close the queue once everything is
//! acked all end.

use leaseq_test_kit::pg as common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use leaseq_async::Config;

#[test]
fn close_wakes_receivers_with_claims_in_flight() {
    common::with_server(|url| async move {
        for round in 0..3 {
            let n = 2_000;
            let q = common::process(
                &url,
                &common::unique("close"),
                Config::new(Duration::from_secs(30)),
            )
            .await;
            let acked = Arc::new(AtomicUsize::new(0));
            let mut workers = Vec::new();
            for _ in 0..4 {
                let (q, acked) = (q.clone(), acked.clone());
                workers.push(tokio::spawn(async move {
                    loop {
                        let batch = q.receive_batch(16).await;
                        if batch.is_empty() {
                            return; // closed
                        }
                        let k = batch.len();
                        assert_eq!(q.ack_batch(batch).await.accepted(), k);
                        if acked.fetch_add(k, Ordering::AcqRel) + k == n {
                            q.close();
                        }
                    }
                }));
            }
            let mut i = 0;
            while i < n {
                let k = 256.min(n - i);
                q.push_batch(vec![vec![0u8; 16]; k]).await.expect("push");
                i += k;
            }
            for w in workers {
                tokio::time::timeout(common::PATIENCE, w)
                    .await
                    .unwrap_or_else(|_| panic!("round {round}: a receiver was not woken by close"))
                    .expect("worker");
            }
            assert_eq!(
                acked.load(Ordering::Acquire),
                n,
                "round {round}: every item acked"
            );
            let s = q.refresh_stats().await.expect("stats");
            assert_eq!(s.live(), 0, "round {round}: nothing left");
        }
    });
}
