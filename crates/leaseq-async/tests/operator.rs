//! The operator API every store shares, on the shared layer: a store failure reaches the
//! caller typed (never a wrong "not found" or a silent `Ok`), and a batch push waits for
//! room in a bounded queue instead of handing the overflow back (virtual time).

mod support;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::{
    AdminError, BatchError, CancelError, Config, LeaseQueue, Page, PushError, RedriveError, Runtime,
};
use leaseq_test_kit::sim;
use leaseq_test_kit::steps;

use support::faulty::queue;

/// Each operator call the store fails answers `StoreError` (not done), and changes
/// nothing: the item it named is still there for the next call, which succeeds.
#[test]
fn operator_calls_report_store_failures_typed() {
    sim::run(|rt| async move {
        let (q, store) = queue(&rt);
        let id = q.push(7).await.unwrap();
        let fail = |n| store.faults.admin_not_done.store(n, Ordering::Release);

        fail(1);
        let e = q.cancel(id).await.expect_err("injected");
        assert!(
            matches!(&e, AdminError::Store(s) if !s.is_outcome_unknown()),
            "{e:?}"
        );
        fail(1);
        assert!(q.peek(Page::ALL).await.is_err());
        assert_eq!(q.peek(Page::ALL).await.unwrap().len(), 1, "still there");

        steps::dead_letter_next(&q, "poison").await;
        fail(1);
        assert!(q.dead_letters(Page::ALL).await.is_err());
        fail(1);
        let e = q.redrive(id).await.expect_err("injected");
        assert!(e.store().is_some() && e.refused().is_none(), "{e:?}");
        fail(1);
        assert!(q.redrive_all().await.is_err());
        fail(1);
        assert!(q.purge_dead_letters().await.is_err());
        let dead = q.dead_letters(Page::ALL).await.unwrap();
        assert_eq!(dead.len(), 1, "the failed calls changed nothing");
        assert_eq!((dead[0].id, dead[0].item.clone()), (id, Ok(7)));

        assert_eq!(q.redrive(id).await, Ok(id));
        fail(1);
        assert!(q.purge().await.is_err());
        assert_eq!(q.purge().await, Ok(1));
        assert_eq!(
            q.cancel(id).await,
            Err(AdminError::Refused(CancelError::NotFound(id)))
        );
        assert_eq!(
            q.redrive(id).await,
            Err(AdminError::Refused(RedriveError::NotFound(id)))
        );
    });
}

/// Pages of the dead letters and of the live items follow id order and join up.
#[test]
fn pages_cover_every_entry_once_in_id_order() {
    sim::run(|rt| async move {
        let config = Config::new(Duration::from_secs(10)).with_max_attempts(1);
        let q: LeaseQueue<u32, _> = LeaseQueue::with_runtime(rt, config).unwrap();
        let ids = q.push_batch(0..7).await.unwrap();
        for _ in 0..4 {
            q.receive().await.unwrap().dead_letter("x").await.unwrap();
        }
        let mut seen = Vec::new();
        let mut page = Page::first(3);
        loop {
            let got = q.dead_letters(page).await.unwrap();
            seen.extend(got.iter().map(|l| l.id));
            match got.last() {
                Some(last) if got.len() == page.limit => page = page.next(last.id),
                _ => break,
            }
        }
        assert_eq!(seen, ids[..4]);
        let live = q.peek(Page::first(2).next(ids[4])).await.unwrap();
        let live: Vec<_> = live.iter().map(|v| v.id).collect();
        assert_eq!(live, ids[5..7]);
    });
}

/// `push_batch` on a full bounded queue waits for room (it handed the overflow back
/// before): it returns every id once receivers made room, in order, none refused.
/// `try_push_batch` never waits: it stops at the first refusal, with the accepted ids and
/// everything else handed back.
#[test]
fn push_batch_waits_for_room_and_try_push_batch_hands_back() {
    sim::run(|rt| async move {
        let config = Config::new(Duration::from_secs(10)).with_capacity(2);
        let q: LeaseQueue<u32, _> = LeaseQueue::with_runtime(rt.clone(), config).unwrap();

        let BatchError {
            accepted,
            error,
            rest,
        } = q.try_push_batch(0..5).unwrap_err();
        assert_eq!(accepted.len(), 2);
        assert!(matches!(error, PushError::Full(2)), "{error:?}");
        assert_eq!(rest, vec![3, 4]);
        for _ in 0..2 {
            q.receive().await.unwrap().ack().await.unwrap();
        }

        let got = Arc::new(Mutex::new(Vec::new()));
        let consumer = rt.spawn(Box::pin({
            let (q, got) = (q.clone(), got.clone());
            async move {
                for _ in 0..5 {
                    let d = q.receive().await.unwrap();
                    got.lock().unwrap().push(*d.item());
                    d.ack().await.unwrap();
                }
            }
        }));
        let ids = q.push_batch(10..15).await.expect("waits for room");
        assert_eq!(ids.len(), 5);
        consumer.await;
        assert_eq!(*got.lock().unwrap(), vec![10, 11, 12, 13, 14]);
        assert_eq!(
            q.stats().rejected,
            1,
            "only try_push_batch's refusal counts"
        );
    });
}
