//! First light: push, receive, ack through the database.

use leaseq_test_kit::pg as common;

use std::time::Duration;

use leaseq_async::Config;
use leaseq_postgres::Options;

#[test]
fn push_receive_ack() {
    common::with_server(|url| async move {
        let q: leaseq_postgres::PgQueue<Vec<u8>> = common::open_bytes(
            &url,
            common::unique("smoke").to_string(),
            Config::new(Duration::from_secs(5)),
            Options::new().schema(common::SCHEMA),
        )
        .await;
        for i in 0..100u8 {
            q.push(vec![i]).await.expect("push");
        }
        let mut seen = Vec::new();
        for _ in 0..100 {
            let d = match tokio::time::timeout(Duration::from_secs(5), q.receive()).await {
                Ok(d) => d.expect("delivery"),
                Err(_) => panic!("no delivery; last error: {:?}", q.store().last_error()),
            };
            seen.push(d.item()[0]);
            d.ack().await.expect("ack");
        }
        seen.sort();
        assert_eq!(seen, (0..100).collect::<Vec<_>>());
        let s = q.refresh_stats().await.expect("stats");
        assert_eq!(s.live(), 0);
        assert_eq!(s.acked, 100);
    });
}
