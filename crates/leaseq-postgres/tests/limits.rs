//! The maximum item size ([`Options::max_item_size`]): a larger push is refused, typed,
//! with its item, and nothing is stored; a larger row read back (written under a higher
//! limit) is never loaded: dead-lettered with the sizes, the items around it delivered.

use leaseq_test_kit::pg as common;

use common::*;

use std::time::Duration;

use leaseq_async::{Config, PushError};
use leaseq_postgres::{Options, PgQueue, DEFAULT_MAX_ITEM_SIZE};

async fn open_max(url: &str, queue: &str, max: usize) -> PgQueue<Vec<u8>> {
    common::open_bytes(
        url,
        queue.to_string(),
        Config::new(Duration::from_secs(30)),
        options().max_item_size(max),
    )
    .await
}

#[test]
fn the_default_is_256_kib() {
    assert_eq!(Options::default().max_item_size, DEFAULT_MAX_ITEM_SIZE);
    assert_eq!(DEFAULT_MAX_ITEM_SIZE, 256 * 1024);
}

#[test]
fn an_item_over_the_limit_is_refused_with_the_item_and_nothing_stored() {
    common::with_server(|url| async move {
        let q = open_max(&url, &unique("too-large"), 100).await;
        let big = vec![7u8; 101];
        match q.try_push(big.clone()) {
            Err(PushError::TooLarge { item, size, max }) => {
                assert_eq!((item, size, max), (big.clone(), 101, 100));
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
        match q.push(big.clone()).await {
            Err(e @ PushError::TooLarge { .. }) => {
                assert!(e.to_string().contains("101 bytes"), "{e}");
                assert_eq!(e.into_item(), Some(big.clone()));
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
        let s = q.refresh_stats().await.expect("stats");
        assert_eq!((s.live(), s.pushed), (0, 0), "nothing was stored");
        // Exactly at the limit is accepted.
        q.push(vec![3u8; 100]).await.expect("push at the limit");
        let s = q.refresh_stats().await.expect("stats");
        assert_eq!(s.live(), 1);
    });
}

#[test]
fn an_oversized_row_read_back_is_dead_lettered_never_loaded() {
    common::with_server(|url| async move {
        let name = unique("oversized-row");
        // A producer with a higher limit writes a 5,000-byte item between two small ones.
        let producer = open_max(&url, &name, 10_000).await;
        producer.push(vec![1]).await.expect("push");
        producer.push(vec![9u8; 5_000]).await.expect("push big");
        producer.push(vec![2]).await.expect("push");
        drop(producer);
        let q = open_max(&url, &name, 1_000).await;
        let mut got = Vec::new();
        for _ in 0..2 {
            let d = receive(&q).await;
            got.push(d.item().clone());
            d.ack().await.expect("ack");
        }
        assert_eq!(got, [vec![1], vec![2]]);
        let (_, error) = common::one_undecodable_dead_letter(&q).await;
        assert!(
            error.contains("5000 bytes") && error.contains("1000"),
            "{error:?}"
        );
    });
}
