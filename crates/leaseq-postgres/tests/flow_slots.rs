//! A queue limit alone, claimed through its slots (issue 32, `flow_slots_sql.rs`), in one
//! process: a receive the limit holds back gets the slot that an ack or a dead letter of
//! this process frees (the settle rings the claimer, `settle.rs`), and never more leases
//! are out than the limit, whoever settles them; the store says when the limit held a take
//! back (`Store::limit_binds`, what a pool's fetcher leases ahead by) and when not.

use leaseq_test_kit::pg as common;

use std::time::Duration;

use leaseq_async::Config;
use leaseq_core::LimitScope;
use leaseq_postgres::{BytesCodec, PgQueue};

async fn open(url: &str, prefix: &str) -> PgQueue<Vec<u8>> {
    let options = common::options().poll_interval(Duration::from_millis(50));
    let config = Config::new(Duration::from_secs(30));
    common::open(url, common::unique(prefix), config, BytesCodec, options).await
}

/// Nothing comes within half a second.
async fn nothing(q: &PgQueue<Vec<u8>>) {
    if let Ok(d) = q.receive_timeout(Duration::from_millis(500)).await {
        panic!("{:?} came", String::from_utf8_lossy(d.item()));
    }
}

#[test]
fn a_receive_held_by_the_limit_gets_the_slot_a_settle_frees() {
    common::with_server(|url| async move {
        let q = open(&url, "slotwake").await;
        q.set_limit(LimitScope::Queue, Some(2))
            .await
            .expect("limit");
        for i in 0..5u8 {
            q.push(vec![i]).await.expect("push");
        }
        let a = common::receive(&q).await;
        let b = common::receive(&q).await;
        // The limit binds: a third waits, in this task and in another.
        nothing(&q).await;
        let waiter = {
            let q = q.clone();
            tokio::spawn(async move { common::receive(&q).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            !waiter.is_finished(),
            "a third lease came under a limit of 2"
        );
        // An ack frees a slot: the waiting receive gets it, and only it.
        a.ack().await.expect("ack");
        let c = waiter.await.expect("waiter");
        nothing(&q).await;
        // A dead letter frees one too.
        b.dead_letter("poison").await.expect("dead letter");
        let d = common::receive(&q).await;
        nothing(&q).await;
        c.ack().await.expect("ack");
        d.ack().await.expect("ack");
        let e = common::receive(&q).await;
        e.ack().await.expect("ack");
        nothing(&q).await;
        let stats = q.stats();
        assert_eq!(stats.acked, 4, "{stats:?}");
        assert_eq!(stats.dead_lettered, 1, "{stats:?}");
    });
}

/// Whether the store says its last take was held back by the limit (what a pool's fetcher
/// reads to lease ahead less, `fetcher.rs`).
fn binds(q: &PgQueue<Vec<u8>>) -> bool {
    leaseq_async::Store::limit_binds(&**q.store())
}

#[test]
fn the_store_says_when_the_limit_held_a_take_back_and_when_not() {
    common::with_server(|url| async move {
        let q = open(&url, "slotbinds").await;
        q.set_limit(LimitScope::Queue, Some(2))
            .await
            .expect("limit");
        for i in 0..3u8 {
            q.push(vec![i]).await.expect("push");
        }
        let a = common::receive(&q).await;
        let b = common::receive(&q).await;
        assert!(!binds(&q), "the takes under the limit were not held");
        nothing(&q).await;
        assert!(binds(&q), "a take past the limit of 2 was held back");
        a.ack().await.expect("ack");
        let c = common::receive(&q).await;
        assert!(!binds(&q), "the take of the freed slot was not held");
        b.ack().await.expect("ack");
        c.ack().await.expect("ack");
        nothing(&q).await;
        assert!(!binds(&q), "an empty queue holds nothing back");
        // Held back again, then the limit removed: the store claims plainly from now on,
        // and a plain claim never says a limit binds, so the flag must not outlive it (a
        // fetcher would lease ahead its least for good).
        for i in 3..6u8 {
            q.push(vec![i]).await.expect("push");
        }
        let d = common::receive(&q).await;
        let e = common::receive(&q).await;
        nothing(&q).await;
        assert!(binds(&q), "held back by the limit again");
        q.set_limit(LimitScope::Queue, None).await.expect("unlimit");
        assert!(!binds(&q), "no limit, nothing binds");
        let f = common::receive(&q).await;
        assert!(!binds(&q), "a plain take is never held by a limit");
        for x in [d, e, f] {
            x.ack().await.expect("ack");
        }
    });
}
