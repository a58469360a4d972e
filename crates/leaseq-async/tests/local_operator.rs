//! `LocalOperator` over memory queues on virtual time: dead letters listed a page at a
//! time through a reason or kind filter (pages past the store's first, the filter applied
//! before the limit), a kind filter on a rendered queue takes nothing, the bulk calls act
//! on what the filter takes, a bulk cancel on a kind leaves the other kind, times read on
//! the wall clock, and an unknown queue is a typed error.

use std::time::{Duration, SystemTime};

use leaseq_async::operator::{DeadQuery, LiveQuery, LocalOperator, Operator, OperatorError};
use leaseq_async::{Config, Failure, LeaseQueue, MessageId, Page, Reason, SimRuntime};

/// An envelope's bytes: the kind's length, the kind, the arguments.
fn envelope(kind: &str) -> Vec<u8> {
    [&[kind.len() as u8][..], kind.as_bytes(), b"{}"].concat()
}

/// `jobs` with 7 dead letters whose kinds go a, b, a, b, ...: those at even positions
/// nacked, the others rejected.
async fn jobs(rt: &SimRuntime) -> LeaseQueue<Vec<u8>, SimRuntime> {
    let q = LeaseQueue::builder(Config::new(Duration::from_secs(30)).with_max_attempts(1))
        .name("jobs")
        .runtime(rt.clone())
        .build()
        .unwrap();
    for i in 0..7 {
        q.push(envelope(if i % 2 == 0 { "a" } else { "b" }))
            .await
            .unwrap();
        let d = q.try_receive().unwrap();
        if i % 2 == 0 {
            d.nack_with(Failure::error("503")).await.unwrap();
        } else {
            d.dead_letter("bad").await.unwrap();
        }
    }
    q
}

fn ids(items: &[leaseq_async::StoredItem]) -> Vec<u64> {
    items.iter().map(|i| i.id.get()).collect()
}

#[test]
fn dead_letters_page_through_a_filter() {
    let rt = SimRuntime::new();
    rt.block_on(async {
        let q = jobs(&rt).await;
        let op = LocalOperator::new().with(q.clone());
        let all = op
            .dead_letters("jobs", Page::ALL, &DeadQuery::all())
            .await
            .unwrap();
        assert_eq!(all.len(), 7);
        let a: Vec<u64> = all.iter().step_by(2).map(|i| i.id.get()).collect();

        let kind_a = DeadQuery::all().kind("a");
        let first = op
            .dead_letters("jobs", Page::first(2), &kind_a)
            .await
            .unwrap();
        assert_eq!(ids(&first), a[..2]);
        assert_eq!(first[0].payload.as_deref(), Some(&envelope("a")[..]));
        assert_eq!(first[0].reason, Some(Reason::Nacked));
        assert_eq!(first[0].last_error.as_deref(), Some("503"));
        let dead_at = first[0].dead_at.unwrap();
        let skew = SystemTime::now().duration_since(dead_at).unwrap();
        assert!(skew < Duration::from_secs(3600), "on the wall clock");
        let next = op
            .dead_letters("jobs", Page::first(2).next(first[1].id), &kind_a)
            .await
            .unwrap();
        assert_eq!(ids(&next), a[2..]);

        let rejected = DeadQuery::all().reason(Reason::Rejected);
        let r = op.dead_letters("jobs", Page::ALL, &rejected).await.unwrap();
        assert_eq!(r.len(), 3);
        assert!(r.iter().all(|i| i.reason == Some(Reason::Rejected)));

        // The bulk calls take what the filter takes.
        assert_eq!(op.purge_dead("jobs", &rejected).await, Ok(3));
        assert_eq!(
            op.redrive_dead("jobs", &DeadQuery::all().kind("a")).await,
            Ok(4)
        );
        let s = q.stats();
        assert_eq!((s.ready, s.dead), (4, 0));
        let c = op.counts("jobs").await.unwrap();
        assert_eq!((c.queue.as_str(), c.ready, c.dead), ("jobs", 4, 0));
    });
}

#[test]
fn a_rendered_queue_shows_its_rendering_and_has_no_kinds() {
    let rt = SimRuntime::new();
    rt.block_on(async {
        let q = LeaseQueue::builder(Config::new(Duration::from_secs(30)).with_max_attempts(1))
            .name("numbers")
            .runtime(rt.clone())
            .build()
            .unwrap();
        q.push(41u32).await.unwrap();
        q.try_receive().unwrap().dead_letter("no").await.unwrap();
        let op = LocalOperator::new().with_rendered(q.clone(), |n: &u32| n.to_string().into());
        let all = op
            .dead_letters("numbers", Page::ALL, &DeadQuery::all())
            .await
            .unwrap();
        assert_eq!(all[0].payload.as_deref(), Some(&b"41"[..]));
        assert_eq!(all[0].size, 2);
        let kind = DeadQuery::all().kind("a");
        assert!(op
            .dead_letters("numbers", Page::ALL, &kind)
            .await
            .unwrap()
            .is_empty());
        assert_eq!(op.purge_dead("numbers", &kind).await, Ok(0));
        assert_eq!(q.stats().dead, 1);
    });
}

#[test]
fn bulk_cancel_and_unknown_queues() {
    let rt = SimRuntime::new();
    rt.block_on(async {
        let q = LeaseQueue::builder(Config::new(Duration::from_secs(30)))
            .name("work")
            .runtime(rt.clone())
            .build()
            .unwrap();
        for _ in 0..5 {
            q.push(b"x".to_vec()).await.unwrap();
        }
        let held = q.try_receive().unwrap();
        let op = LocalOperator::new().with(q.clone());
        let live = op.items("work", Page::ALL).await.unwrap();
        assert_eq!(live.len(), 5);
        assert!(live[0].deadline.is_some(), "in flight: its lease's end");
        // The first three: the one in flight stays with its holder.
        assert_eq!(live[0].state, leaseq_async::StoredState::InFlight);
        let range = LiveQuery::all().ids(live[0].id, live[2].id);
        assert_eq!(op.cancel("work", &range).await, Ok(2));
        assert_eq!(q.stats().ready, 2);
        let left = op.items("work", Page::ALL).await.unwrap();
        assert_eq!(
            ids(&left),
            ids(&[live[0].clone(), live[3].clone(), live[4].clone()])
        );
        held.ack().await.unwrap();

        let gone = OperatorError::NoSuchQueue("nope".into());
        assert_eq!(op.counts("nope").await, Err(gone.clone()));
        assert_eq!(op.set_paused("nope", true).await, Err(gone.clone()));
        assert_eq!(op.redrive("nope", MessageId::new(1)).await, Err(gone));
        assert!(matches!(
            op.redrive("work", MessageId::new(99)).await,
            Err(OperatorError::Refused(_))
        ));
    });
}
