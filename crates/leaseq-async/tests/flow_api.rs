//! Flow control through the one API every store offers (`Push::kind` / `partition` /
//! `group`, `FlowControl` forwarded by `LeaseQueue`), on the memory store: limits never
//! exceeded by a pool, rates held, groups in push order, what is held back counted, the
//! settings read back, batches and waiting pushes routed, a key window beside flow keys
//! refused with the item handed back. Virtual time.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::core::{FlowKey, FlowKeys, KeyWindow, LimitScope, Rate};
use leaseq_async::{Config, FlowSettings, FlowWaiting, Pool, Push, PushError, Runtime, Store};
use leaseq_test_kit::sim;

const SEC: Duration = Duration::from_secs(1);

#[test]
fn a_pool_never_exceeds_a_partition_limit_set_through_the_queue() {
    sim::run(|rt| async move {
        let q = sim::queue(&rt, Config::new(60 * SEC));
        let acme = LimitScope::Partition(FlowKey::named("acme"));
        q.set_limit(acme, Some(3)).await.unwrap();
        for n in 0..20u32 {
            q.push_with(n, Push::new().partition("acme")).await.unwrap();
            q.push_with(100 + n, Push::new().partition("bolt"))
                .await
                .unwrap();
        }
        let (now, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let pool = Pool::builder(q.clone()).workers(8).spawn({
            let (now, peak, rt) = (now.clone(), peak.clone(), rt.clone());
            move |job| {
                let (now, peak, rt) = (now.clone(), peak.clone(), rt.clone());
                async move {
                    let limited = job.item < 100;
                    if limited {
                        let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(n, Ordering::SeqCst);
                    }
                    rt.sleep_until(rt.now().saturating_add(SEC)).await;
                    if limited {
                        now.fetch_sub(1, Ordering::SeqCst);
                    }
                    Ok(())
                }
            }
        });
        q.wait_empty().await;
        let report = pool.shutdown(SEC).await;
        assert_eq!(report.stats.ok, 40);
        assert_eq!(
            peak.load(Ordering::SeqCst),
            3,
            "the limit is reached, never passed"
        );
    });
}

#[test]
fn a_rate_set_through_the_queue_spaces_the_starts() {
    sim::run(|rt| async move {
        let q = sim::queue(&rt, Config::new(60 * SEC));
        let ten = Rate::per_second(NonZeroU32::new(10).unwrap()).burst(NonZeroU32::MIN);
        q.set_rate(LimitScope::Kind(FlowKey::named("sms")), Some(ten))
            .await
            .unwrap();
        for n in 0..5u32 {
            q.try_push_with(n, Push::new().kind("sms")).unwrap();
        }
        let t0 = rt.now();
        let mut starts = Vec::new();
        for _ in 0..5 {
            let d = q.receive().await.unwrap();
            starts.push(rt.now().saturating_duration_since(t0));
            d.ack().await.unwrap();
        }
        let expected: Vec<Duration> = (0..5).map(|i| Duration::from_millis(100 * i)).collect();
        assert_eq!(starts, expected);
        q.set_rate(LimitScope::Kind(FlowKey::named("sms")), None)
            .await
            .unwrap();
        assert_eq!(q.flow_settings().await.unwrap(), FlowSettings::default());
    });
}

#[test]
fn a_group_runs_in_push_order_one_at_a_time_under_a_pool() {
    sim::run(|rt| async move {
        let q = sim::queue(&rt, Config::new(60 * SEC));
        for n in 0..10u32 {
            for g in ["a", "b", "c"] {
                q.push_with((g, n), Push::new().group(g)).await.unwrap();
            }
        }
        let t0 = rt.now();
        let log = Arc::new(Mutex::new(Vec::new()));
        let running = Arc::new(Mutex::new(Vec::<&'static str>::new()));
        let pool = Pool::builder(q.clone()).workers(6).spawn({
            let (log, running, rt) = (log.clone(), running.clone(), rt.clone());
            move |job| {
                let (log, running, rt) = (log.clone(), running.clone(), rt.clone());
                async move {
                    let (g, n) = job.item;
                    {
                        let mut r = running.lock().unwrap();
                        assert!(!r.contains(&g), "two of group {g} at once");
                        r.push(g);
                    }
                    log.lock().unwrap().push((g, n));
                    rt.sleep_until(rt.now().saturating_add(SEC)).await;
                    running.lock().unwrap().retain(|x| *x != g);
                    Ok(())
                }
            }
        });
        q.wait_empty().await;
        pool.shutdown(SEC).await;
        let log = log.lock().unwrap();
        assert_eq!(log.len(), 30);
        for g in ["a", "b", "c"] {
            let order: Vec<u32> = log.iter().filter(|(x, _)| *x == g).map(|e| e.1).collect();
            assert_eq!(order, (0..10).collect::<Vec<_>>(), "group {g}");
        }
        // Three groups, one at a time each: ten rounds of a second at least.
        assert!(rt.now().saturating_duration_since(t0) >= 10 * SEC);
    });
}

#[test]
fn what_is_held_back_is_counted_by_rule() {
    sim::run(|rt| async move {
        let q = sim::queue(&rt, Config::new(60 * SEC));
        let email = LimitScope::Kind(FlowKey::named("email"));
        q.set_limit(email, Some(1)).await.unwrap();
        let slow = Rate::per_second(NonZeroU32::MIN).burst(NonZeroU32::MIN);
        q.set_rate(LimitScope::Partition(FlowKey::named("p")), Some(slow))
            .await
            .unwrap();
        for n in 0..3u32 {
            q.try_push_with(n, Push::new().kind("email")).unwrap();
        }
        for n in 10..12u32 {
            q.try_push_with(n, Push::new().partition("p")).unwrap();
        }
        for n in 20..23u32 {
            q.try_push_with(n, Push::new().group("g")).unwrap();
        }
        assert_eq!(
            q.flow_waiting().await.unwrap(),
            FlowWaiting::new(0, 0, 2),
            "only the group's tail waits before any lease"
        );
        let mut held = Vec::new();
        while let Some(d) = q.try_receive() {
            held.push(d);
        }
        let got: Vec<u32> = held.iter().map(|d| *d.item()).collect();
        assert_eq!(got, vec![0, 10, 20]);
        // email 1 and 2 on the limit, p's 11 on the rate, the group's two on its turn.
        assert_eq!(q.flow_waiting().await.unwrap(), FlowWaiting::new(2, 1, 2));
        let settings = q.flow_settings().await.unwrap();
        assert_eq!(settings.limits, vec![(email, 1)]);
        assert_eq!(
            settings.rate(LimitScope::Partition(FlowKey::named("p"))),
            Some(slow)
        );
        assert_eq!(settings.limit(LimitScope::Queue), None);
    });
}

#[test]
fn a_flow_batch_is_tagged_item_by_item() {
    sim::run(|rt| async move {
        let q = sim::queue(&rt, Config::new(60 * SEC));
        let ids = q
            .store()
            .try_push_batch(&mut (0..4u32), &Push::new().group("g"))
            .unwrap();
        assert_eq!(ids.len(), 4);
        assert_eq!(q.flow_waiting().await.unwrap().on_groups, 3);
        let first = q.try_receive().unwrap();
        assert_eq!(*first.item(), 0);
        assert!(q.try_receive().is_none());
    });
}

#[test]
fn a_key_window_beside_flow_keys_is_refused_with_the_item() {
    sim::run(|rt| async move {
        let q = sim::queue(&rt, Config::new(60 * SEC));
        let push = Push::new()
            .key("k")
            .key_window(KeyWindow::Period(SEC))
            .kind("email");
        match q.try_push_with(7u32, push.clone()) {
            Err(PushError::Unsupported { item, .. }) => assert_eq!(item, 7),
            other => panic!("{other:?}"),
        }
        match q.store().try_push_batch(&mut (1..3u32), &push) {
            Err((ids, PushError::Unsupported { item, .. })) => {
                assert!(ids.is_empty());
                assert_eq!(item, 1);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(q.stats().ready, 0);
    });
}

#[test]
fn flow_keys_are_given_by_name_or_by_id() {
    assert_eq!(Push::new().flow(), None);
    assert_eq!(Push::new().flow_keys(FlowKeys::new()).flow(), None);
    let named = Push::new().kind("k").partition("p").group("g");
    let ids = FlowKeys::new()
        .kind(FlowKey::named("k"))
        .partition(FlowKey::named("p"))
        .group(FlowKey::named("g"));
    assert_eq!(named.flow(), Some(ids));
    let replaced = named.flow_keys(FlowKeys::new().kind(FlowKey::new(3)));
    assert_eq!(replaced.flow(), Some(FlowKeys::new().kind(FlowKey::new(3))));
    assert!(Push::new().kind("k").flow_conflict().is_none());
    let windowed = Push::new().key("x").key_window(KeyWindow::Period(SEC));
    assert!(windowed.flow_conflict().is_none());
    assert!(windowed.group("g").flow_conflict().is_some());
}

#[test]
fn a_blocking_dead_letter_holds_its_group_on_the_memory_store() {
    use leaseq_async::core::GroupDeadLetter;
    sim::run(|rt| async move {
        let config = Config::new(60 * SEC).group_dead_letter(GroupDeadLetter::Block);
        let q = sim::queue(&rt, config);
        for n in 0..3u32 {
            q.try_push_with(n, Push::new().group("g")).unwrap();
        }
        let first = q.receive().await.unwrap();
        let id = first.id();
        first.dead_letter("bad").await.unwrap();
        assert!(
            q.try_receive().is_none(),
            "the group waits for its dead letter"
        );
        assert_eq!(q.flow_waiting().await.unwrap().on_groups, 2);
        q.redrive(id).await.unwrap();
        let again = q.receive().await.unwrap();
        assert_eq!(*again.item(), 0, "the head again");
        again.dead_letter("bad").await.unwrap();
        assert!(q.try_receive().is_none());
        assert_eq!(q.purge_dead_letters().await.unwrap(), 1);
        assert_eq!(
            *q.receive().await.unwrap().item(),
            1,
            "the purge let the next go"
        );
        q.check_invariants().unwrap();
    });
}
