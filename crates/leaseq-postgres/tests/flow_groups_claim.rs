//! The claim of a grouped queue with no limit and no rate (`flow_groups_sql.rs`): the
//! groups' rows locked rather than the queue, so that two stores claim side by side.
//! Asserted here: two stores never hold two items of one group at once and take each
//! group's items in push order; ungrouped items of the same queue still come; a limit set
//! on a grouped queue holds at once (its claims walk under the lock again) and its removal
//! lets the groups' claim take over.

use leaseq_test_kit::pg as common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use leaseq_async::{Config, Push};
use leaseq_core::LimitScope;
use leaseq_postgres::{BytesCodec, PgDelivery, PgQueue};

async fn open(url: &str, name: &str) -> PgQueue<Vec<u8>> {
    let options = common::options().poll_interval(Duration::from_millis(50));
    common::open(
        url,
        name.to_string(),
        Config::new(Duration::from_secs(30)),
        BytesCodec,
        options,
    )
    .await
}

async fn push(q: &PgQueue<Vec<u8>>, group: Option<&str>, item: &str) {
    let push = match group {
        Some(g) => Push::new().group(g),
        None => Push::new(),
    };
    q.push_with(item.as_bytes().to_vec(), push)
        .await
        .expect("push");
}

fn name(d: &PgDelivery<Vec<u8>>) -> String {
    String::from_utf8(d.item().clone()).expect("utf-8")
}

/// Everything `q` hands out within a short while, unacked.
async fn drain(q: &PgQueue<Vec<u8>>) -> Vec<PgDelivery<Vec<u8>>> {
    let mut out = Vec::new();
    while let Ok(d) = q.receive_timeout(Duration::from_millis(300)).await {
        out.push(d);
    }
    out
}

#[test]
fn two_stores_hold_one_item_of_a_group_at_a_time_in_push_order() {
    common::with_server(|url| async move {
        let queue = common::unique("flowgclaim");
        let (a, b) = (open(&url, &queue).await, open(&url, &queue).await);
        let (groups, per) = (5u32, 4u32);
        for i in 0..per {
            for g in 0..groups {
                push(&a, Some(&format!("g{g}")), &format!("g{g}/{i}")).await;
            }
        }
        let mut next: BTreeMap<String, u32> = BTreeMap::new();
        let mut done = 0;
        while done < groups * per {
            // Both stores take what they can: one item per group in flight, at most.
            let (mut held, mut from_b) = (drain(&a).await, drain(&b).await);
            held.append(&mut from_b);
            assert!(
                !held.is_empty(),
                "nothing came with {done} of {} done",
                groups * per
            );
            let mut seen = BTreeSet::new();
            for d in &held {
                let item = name(d);
                let (g, i) = item.split_once('/').expect("group/index");
                assert!(
                    seen.insert(g.to_string()),
                    "two items of {g} held at once: {item}"
                );
                let want = next.entry(g.to_string()).or_default();
                assert_eq!(i.parse::<u32>().unwrap(), *want, "{g} out of push order");
                *want += 1;
            }
            for d in held {
                d.ack().await.expect("ack");
                done += 1;
            }
        }
        assert!(next.values().all(|&n| n == per), "{next:?}");
    });
}

#[test]
fn ungrouped_items_of_a_grouped_queue_still_come() {
    common::with_server(|url| async move {
        let q = open(&url, &common::unique("flowgmix")).await;
        push(&q, Some("g"), "g/0").await;
        push(&q, Some("g"), "g/1").await;
        push(&q, None, "u/0").await;
        push(&q, None, "u/1").await;
        let held: BTreeSet<String> = drain(&q).await.iter().map(name).collect();
        let want: BTreeSet<String> = ["g/0", "u/0", "u/1"].map(String::from).into();
        assert_eq!(held, want, "the group's head and every ungrouped item");
    });
}

#[test]
fn a_limit_on_a_grouped_queue_holds_at_once_and_its_removal_frees_the_groups() {
    common::with_server(|url| async move {
        let q = open(&url, &common::unique("flowglim")).await;
        for g in 0..4 {
            push(&q, Some(&format!("g{g}")), &format!("g{g}/0")).await;
        }
        // The groups' claim first (no limit yet): one item taken.
        let first = common::receive(&q).await;
        q.set_limit(LimitScope::Queue, Some(2))
            .await
            .expect("limit");
        let more = drain(&q).await;
        assert_eq!(
            more.len(),
            1,
            "a limit of 2 with one in flight lets one more go"
        );
        q.set_limit(LimitScope::Queue, None)
            .await
            .expect("no limit");
        let rest = drain(&q).await;
        assert_eq!(
            rest.len(),
            2,
            "the other two groups' heads, once the limit is gone"
        );
        for d in std::iter::once(first).chain(more).chain(rest) {
            d.ack().await.expect("ack");
        }
    });
}
