//! Ordered groups on Postgres in one process (issue 32): groups take turns (a group pushed
//! first does not run ahead of the others), and what a dead letter does to its group, per
//! queue: `GroupDeadLetter::Release` (the next item goes; a redrive makes the dead letter
//! the head again) or `Block` (the group waits until the dead letter is redriven or purged).
//! Also the flow settings' round trip and `flow_waiting`.

use leaseq_test_kit::pg as common;

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::time::Duration;

use leaseq_async::{Config, Push};
use leaseq_core::{GroupDeadLetter, LimitScope, Rate};
use leaseq_postgres::{BytesCodec, PgQueue};

async fn open(url: &str, prefix: &str, config: Config) -> PgQueue<Vec<u8>> {
    let options = common::options().poll_interval(Duration::from_millis(50));
    common::open(url, common::unique(prefix), config, BytesCodec, options).await
}

async fn push(q: &PgQueue<Vec<u8>>, group: &str, index: u32) {
    q.push_with(
        format!("{group}/{index}").into_bytes(),
        Push::new().group(group),
    )
    .await
    .expect("push");
}

async fn next(q: &PgQueue<Vec<u8>>) -> (String, leaseq_postgres::PgDelivery<Vec<u8>>) {
    let d = common::receive(q).await;
    (String::from_utf8(d.item().clone()).expect("utf-8"), d)
}

/// Nothing comes within half a second.
async fn nothing(q: &PgQueue<Vec<u8>>) {
    if let Ok(d) = q.receive_timeout(Duration::from_millis(500)).await {
        panic!("{:?} came", String::from_utf8_lossy(d.item()));
    }
}

#[test]
fn groups_take_turns_whatever_the_push_order() {
    common::with_server(|url| async move {
        let q = open(&url, "flowfair", Config::new(Duration::from_secs(30))).await;
        let (groups, per) = (6u32, 8u32);
        for g in 0..groups {
            for i in 0..per {
                push(&q, &format!("g{g}"), i).await;
            }
        }
        let mut started: BTreeMap<String, u32> = BTreeMap::new();
        for n in 0..groups * per {
            let (item, d) = next(&q).await;
            let (g, i) = item.split_once('/').expect("group/index");
            let count = started.entry(g.to_string()).or_default();
            assert_eq!(i.parse::<u32>().unwrap(), *count, "{g} out of push order");
            *count += 1;
            d.ack().await.expect("ack");
            // Fairness: no group more than one turn ahead of any other with items left.
            let left = |c: &u32| *c < per;
            let least = (0..groups)
                .map(|g| started.get(&format!("g{g}")).copied().unwrap_or(0))
                .filter(left)
                .min()
                .unwrap_or(per);
            let most = started.values().copied().max().unwrap_or(0);
            assert!(
                most <= least + 1,
                "after {} starts a group ran {most} while another with items left ran {least}: {started:?}",
                n + 1
            );
        }
        nothing(&q).await;
    });
}

#[test]
fn a_dead_letter_releases_its_group_by_default() {
    common::with_server(|url| async move {
        let q = open(&url, "flowrel", Config::new(Duration::from_secs(30))).await;
        for i in 0..3 {
            push(&q, "g", i).await;
        }
        let (item, d) = next(&q).await;
        assert_eq!(item, "g/0");
        let id = d.id();
        d.dead_letter("poison").await.expect("dead letter");
        let (item, d) = next(&q).await;
        assert_eq!(item, "g/1", "the next item goes");
        d.ack().await.expect("ack");
        q.redrive(id).await.expect("redrive");
        let (item, d) = next(&q).await;
        assert_eq!(item, "g/0", "the redriven item is the head again");
        d.ack().await.expect("ack");
        let (item, d) = next(&q).await;
        assert_eq!(item, "g/2");
        d.ack().await.expect("ack");
        nothing(&q).await;
    });
}

#[test]
fn a_dead_letter_blocks_its_group_until_redriven_or_purged_with_block() {
    common::with_server(|url| async move {
        let config = Config::new(Duration::from_secs(30)).group_dead_letter(GroupDeadLetter::Block);
        let q = open(&url, "flowblock", config).await;
        for i in 0..3 {
            push(&q, "g", i).await;
        }
        push(&q, "h", 0).await;
        let (item, d) = next(&q).await;
        assert_eq!(item, "g/0");
        let id = d.id();
        d.dead_letter("poison").await.expect("dead letter");
        let (item, d) = next(&q).await;
        assert_eq!(item, "h/0", "another group goes");
        d.ack().await.expect("ack");
        nothing(&q).await;
        let waiting = q.flow_waiting().await.expect("waiting");
        assert_eq!(
            waiting.on_groups, 2,
            "g/1 and g/2 wait for their group: {waiting:?}"
        );
        q.redrive(id).await.expect("redrive");
        for want in ["g/0", "g/1"] {
            let (item, d) = next(&q).await;
            assert_eq!(item, want);
            if want == "g/1" {
                d.dead_letter("poison again").await.expect("dead letter");
            } else {
                d.ack().await.expect("ack");
            }
        }
        nothing(&q).await;
        q.purge_dead_letters().await.expect("purge");
        let (item, d) = next(&q).await;
        assert_eq!(item, "g/2", "a purge lets the next go");
        d.ack().await.expect("ack");
    });
}

#[test]
fn settings_round_trip_and_a_limit_of_zero_holds_everything() {
    common::with_server(|url| async move {
        let q = open(&url, "flowset", Config::new(Duration::from_secs(30))).await;
        let rate = Rate::per_second(NonZeroU32::new(50).unwrap()).burst(NonZeroU32::MIN);
        q.set_limit(LimitScope::Queue, Some(0))
            .await
            .expect("limit");
        q.set_rate(LimitScope::Queue, Some(rate))
            .await
            .expect("rate");
        let s = q.flow_settings().await.expect("settings");
        assert_eq!(s.limit(LimitScope::Queue), Some(0));
        assert_eq!(s.rate(LimitScope::Queue), Some(rate));
        q.push(b"x".to_vec()).await.expect("push");
        nothing(&q).await;
        let waiting = q.flow_waiting().await.expect("waiting");
        assert_eq!(waiting.on_limits, 1, "{waiting:?}");
        q.set_limit(LimitScope::Queue, None)
            .await
            .expect("no limit");
        let (item, d) = next(&q).await;
        assert_eq!(item, "x");
        d.ack().await.expect("ack");
        q.set_rate(LimitScope::Queue, None).await.expect("no rate");
        let s = q.flow_settings().await.expect("settings");
        assert!(s.limits.is_empty() && s.rates.is_empty(), "{s:?}");
        // Back to the plain claim: items still come.
        q.push(b"y".to_vec()).await.expect("push");
        let (item, d) = next(&q).await;
        assert_eq!(item, "y");
        d.ack().await.expect("ack");
    });
}
