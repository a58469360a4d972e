//! Flow control on the SQLite store, kept in the file: a concurrency limit never exceeded
//! by a pool; limits and rates set through the queue back after a reopen; an ordered
//! group's items in push order, one at a time, across a reopen; a rate never exceeded; a
//! format-6 file migrated. (Real time: the writer is a thread. The rate's check is a lower
//! bound on the gaps between starts, which a slow machine only widens.)

mod support;

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use leaseq_async::core::{FlowKey, LimitScope, Rate};
use leaseq_async::{Job, Pool, Push};
use leaseq_sqlite::FORMAT_VERSION;
use leaseq_test_kit::sqlite::shut;

fn item(g: u8, n: u8) -> Vec<u8> {
    vec![g, n]
}

#[test]
fn a_pool_never_exceeds_a_kind_limit_and_the_limit_is_kept_in_the_file() {
    let path = support::temp("flow-limit");
    let q = support::open_default(&path).unwrap();
    let encode = LimitScope::Kind(FlowKey::named("encode"));
    smol::block_on(async {
        q.set_limit(encode, Some(2)).await.unwrap();
        for n in 0..30u8 {
            q.push_with(item(0, n), Push::new().kind("encode"))
                .await
                .unwrap();
            q.push_with(item(1, n), Push::new().kind("mail"))
                .await
                .unwrap();
        }
        let (now, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let pool = Pool::builder(q.clone()).workers(6).spawn({
            let (now, peak) = (now.clone(), peak.clone());
            move |job: Job<Vec<u8>>| {
                let (now, peak) = (now.clone(), peak.clone());
                async move {
                    let limited = job.item[0] == 0;
                    if limited {
                        let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(n, Ordering::SeqCst);
                    }
                    smol::Timer::after(Duration::from_millis(2)).await;
                    if limited {
                        now.fetch_sub(1, Ordering::SeqCst);
                    }
                    Ok(())
                }
            }
        });
        let until = std::time::Instant::now() + Duration::from_secs(30);
        while q.stats().acked < 60 && std::time::Instant::now() < until {
            smol::Timer::after(Duration::from_millis(5)).await;
        }
        let report = pool.shutdown(Duration::from_secs(5)).await;
        assert_eq!(report.stats.ok, 60);
        assert!(peak.load(Ordering::SeqCst) <= 2, "{peak:?}");
    });
    shut(q);
    let q = support::open_default(&path).unwrap();
    smol::block_on(async {
        let settings = q.flow_settings().await.unwrap();
        assert_eq!(settings.limits, vec![(encode, 2)]);
        q.set_limit(encode, None).await.unwrap();
    });
    shut(q);
    let q = support::open_default(&path).unwrap();
    smol::block_on(async {
        assert!(q.flow_settings().await.unwrap().limits.is_empty());
    });
    shut(q);
    support::remove(&path);
}

/// Three groups of five; the first of each acked, the second held when the queue closes
/// (handed back); after the reopen each group goes on in push order, one at a time.
#[test]
fn a_group_keeps_push_order_across_a_reopen() {
    let path = support::temp("flow-group-reopen");
    let q = support::open_default(&path).unwrap();
    smol::block_on(async {
        // Each group pushed whole: without its groups, a reopened queue would hand out
        // group 0's items first.
        for g in 0..3u8 {
            for n in 0..5u8 {
                q.push_with(item(g, n), Push::new().group([g]))
                    .await
                    .unwrap();
            }
        }
        for _ in 0..3 {
            q.receive().await.unwrap().ack().await.unwrap();
        }
        let mut held = Vec::new();
        for _ in 0..3 {
            held.push(q.receive().await.unwrap());
        }
        let seconds: Vec<Vec<u8>> = held.iter().map(|d| d.item().clone()).collect();
        assert_eq!(seconds, vec![item(0, 1), item(1, 1), item(2, 1)]);
        drop(held);
    });
    shut(q);
    let q = support::open_default(&path).unwrap();
    smol::block_on(async {
        assert_eq!(q.flow_waiting().await.unwrap().on_groups, 9);
        // Rounds of three leases at once: one of each group (never two of a group in
        // flight), each group's next in push order.
        let mut next = [1u8; 3];
        for _ in 0..4 {
            let mut round = Vec::new();
            for _ in 0..3 {
                round.push(q.receive().await.unwrap());
            }
            let mut groups: Vec<u8> = round.iter().map(|d| d.item()[0]).collect();
            groups.sort();
            assert_eq!(groups, vec![0, 1, 2], "one of each group at a time");
            for d in round {
                let it = d.item().clone();
                assert_eq!(it[1], next[it[0] as usize], "group {} out of order", it[0]);
                next[it[0] as usize] += 1;
                d.ack().await.unwrap();
            }
        }
        assert_eq!(next, [5; 3]);
        assert_eq!((q.stats().ready, q.stats().in_flight), (0, 0));
    });
    shut(q);
    support::remove(&path);
}

/// A rate of 20 a second, burst 1, set through the queue: no two lease starts closer than
/// 50 ms on the runtime's clock, and the rate is back after a reopen.
#[test]
fn a_rate_is_held_and_kept_in_the_file() {
    let path = support::temp("flow-rate");
    let q = support::open_default(&path).unwrap();
    let sms = LimitScope::Partition(FlowKey::named("sms"));
    let rate = Rate::per_second(NonZeroU32::new(20).unwrap()).burst(NonZeroU32::MIN);
    smol::block_on(async {
        q.set_rate(sms, Some(rate)).await.unwrap();
        for n in 0..6u8 {
            q.push_with(item(0, n), Push::new().partition("sms"))
                .await
                .unwrap();
        }
        // A lease's deadline is its start plus the visibility: the gaps between deadlines
        // are those between the starts the rate allowed (the receive itself returns once
        // the attempt is committed, later by a varying amount).
        let mut starts = Vec::new();
        for _ in 0..6 {
            let d = q.receive().await.unwrap();
            starts.push(d.deadline());
            d.ack().await.unwrap();
        }
        for w in starts.windows(2) {
            let gap = w[1].saturating_duration_since(w[0]);
            assert!(gap >= Duration::from_millis(50), "{gap:?}");
        }
    });
    shut(q);
    let q = support::open_default(&path).unwrap();
    smol::block_on(async {
        assert_eq!(q.flow_settings().await.unwrap().rate(sms), Some(rate));
    });
    shut(q);
    support::remove(&path);
}

/// A format-6 file (no flow columns, no `flow` table) opens, its items back, and is
/// migrated to the current format; flow keys pushed then are kept.
#[test]
fn a_format_6_file_is_migrated() {
    let path = support::temp("flow-v6");
    let q = support::open_default(&path).unwrap();
    smol::block_on(async {
        q.push(item(9, 9)).await.unwrap();
    });
    shut(q);
    {
        // What format 6 was.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "{} PRAGMA user_version = 6;",
            support::BEFORE_FLOW
        ))
        .unwrap();
    }
    let q = support::open_default(&path).unwrap();
    assert_eq!(support::user_version(&path), FORMAT_VERSION);
    smol::block_on(async {
        q.push_with(item(1, 0), Push::new().group("g"))
            .await
            .unwrap();
        q.push_with(item(1, 1), Push::new().group("g"))
            .await
            .unwrap();
    });
    shut(q);
    let q = support::open_default(&path).unwrap();
    smol::block_on(async {
        assert_eq!(q.receive().await.unwrap().item(), &item(9, 9));
        let first = q.receive().await.unwrap();
        assert_eq!(first.item(), &item(1, 0));
        assert!(
            q.try_receive().is_none(),
            "the group kept across the reopen"
        );
    });
    shut(q);
    const { assert!(FORMAT_VERSION >= 7) };
    support::remove(&path);
}

/// `GroupDeadLetter::Block` across a reopen: the dead letter, restored with its flow keys,
/// still holds its group; redriven, it is the head again.
#[test]
fn a_blocking_dead_letter_holds_its_group_across_a_reopen() {
    use leaseq_async::core::GroupDeadLetter;
    use leaseq_sqlite::{BytesCodec, Options};
    let path = support::temp("flow-block");
    let open = |p: &std::path::Path| {
        let config = support::config().group_dead_letter(GroupDeadLetter::Block);
        leaseq_test_kit::sqlite::open_with(p, config, BytesCodec, Options::new()).unwrap()
    };
    let q = open(&path);
    let dead = smol::block_on(async {
        q.push_with(item(0, 0), Push::new().group("g"))
            .await
            .unwrap();
        q.push_with(item(0, 1), Push::new().group("g"))
            .await
            .unwrap();
        let d = q.receive().await.unwrap();
        let id = d.id();
        d.dead_letter("bad").await.unwrap();
        id
    });
    shut(q);
    let q = open(&path);
    smol::block_on(async {
        assert_eq!(q.stats().ready, 1);
        assert_eq!(
            q.flow_waiting().await.unwrap().on_groups,
            1,
            "held by the dead letter"
        );
        q.redrive(dead).await.unwrap();
        assert_eq!(
            q.receive().await.unwrap().item(),
            &item(0, 0),
            "the head again"
        );
    });
    shut(q);
    support::remove(&path);
}
