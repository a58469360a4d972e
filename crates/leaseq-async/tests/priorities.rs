//! Priorities, unique keys and cancel through the async layer (issue 11), on virtual time:
//! the core's rules hold end to end, through receives, deliveries, pools and the inbox.

use std::time::Duration;

use leaseq_async::AdminError;
use leaseq_async::{
    CancelError, Config, LeaseQueue, Pool, Push, PushError, ReceiptError, SimRuntime, MAX_PRIORITY,
};
use leaseq_test_kit::sim;

fn queue(rt: &SimRuntime) -> LeaseQueue<&'static str, SimRuntime> {
    LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(1))).unwrap()
}

/// A higher level is delivered first; within a level, push order; plain pushes (level 0,
/// through the inbox) keep their place among the rest.
#[test]
fn higher_levels_first_fifo_within_a_level() {
    sim::run(|rt| async move {
        let q = queue(&rt);
        q.try_push("a0").unwrap();
        q.try_push_with("b5", Push::new().priority(5)).unwrap();
        q.try_push("c0").unwrap();
        q.try_push_with("d7", Push::new().priority(MAX_PRIORITY))
            .unwrap();
        q.try_push_with("e5", Push::new().priority(5)).unwrap();
        assert_eq!(q.ready_per_level()[5], 2);
        let mut order = Vec::new();
        while let Some(d) = q.try_receive() {
            order.push(*d.item());
            d.ack().await.unwrap();
        }
        assert_eq!(order, ["d7", "b5", "e5", "a0", "c0"]);
    });
}

/// A held key refuses a second push (naming the holder, the item handed back) while the
/// first is ready or in flight; `replace_pending` replaces a ready one; the key is free
/// again once the holder is acked. Out-of-range levels and oversized keys are typed errors.
#[test]
fn unique_keys_refuse_replace_and_free() {
    sim::run(|rt| async move {
        let q = queue(&rt);
        let first = q.try_push_with("v1", Push::new().key("photo-17")).unwrap();
        match q.try_push_with("v2", Push::new().key("photo-17")) {
            Err(PushError::DuplicateKey { item, existing }) => {
                assert_eq!((item, existing), ("v2", first));
            }
            other => panic!("{other:?}"),
        }
        let second = q
            .try_push_with("v3", Push::new().key("photo-17").replace_pending())
            .unwrap();
        assert_ne!(second, first);
        let d = q.receive().await.unwrap();
        assert_eq!((d.id(), *d.item()), (second, "v3"));
        // In flight: never replaced.
        let refused = q.try_push_with("v4", Push::new().key("photo-17").replace_pending());
        assert_eq!(refused.err().and_then(|e| e.existing()), Some(second));
        d.ack().await.unwrap();
        q.try_push_with("v5", Push::new().key("photo-17")).unwrap();
        assert_eq!(q.stats().replaced, 1);

        match q.try_push_with("x", Push::new().priority(MAX_PRIORITY + 1)) {
            Err(PushError::PriorityOutOfRange { item, level }) => {
                assert_eq!((item, level), ("x", MAX_PRIORITY + 1))
            }
            other => panic!("{other:?}"),
        }
        let long = vec![b'k'; leaseq_async::UniqueKey::MAX_LEN + 1];
        match q.try_push_with("y", Push::new().key(&long)) {
            Err(PushError::KeyTooLong { item, len }) => assert_eq!((item, len), ("y", long.len())),
            other => panic!("{other:?}"),
        }
    });
}

/// Cancel removes a ready or delayed item and hands it back; an item in flight is refused
/// unless `cancel_leased`, after which its holder's ack is stale with `Cancelled`.
#[test]
fn cancel_ready_delayed_and_leased() {
    sim::run(|rt| async move {
        let q = queue(&rt);
        let ready = q.try_push("ready").unwrap();
        let delayed = q
            .try_push_with("later", Push::new().delay(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(q.cancel(ready).await, Ok("ready"));
        assert_eq!(q.cancel(delayed).await, Ok("later"));
        assert_eq!(
            q.cancel(ready).await,
            Err(AdminError::Refused(CancelError::NotFound(ready)))
        );

        let held = q.try_push_with("held", Push::new().key("k")).unwrap();
        let d = q.receive().await.unwrap();
        assert_eq!(
            q.cancel(held).await,
            Err(AdminError::Refused(CancelError::InFlight(held)))
        );
        assert_eq!(q.cancel_leased(held).await, Ok("held"));
        assert_eq!(d.ack().await, Err(ReceiptError::Cancelled(held).into()));
        // The key was freed with the cancel.
        q.try_push_with("again", Push::new().key("k")).unwrap();
        let s = q.stats();
        assert_eq!(s.cancelled, 3);
        q.check_invariants().unwrap();
    });
}

/// A pool works the highest level first.
#[test]
fn a_pool_takes_the_highest_level_first() {
    sim::run(|rt| async move {
        let q: LeaseQueue<u8, SimRuntime> =
            LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(1))).unwrap();
        for level in [0u8, 3, 7, 1, 7, 3] {
            q.try_push_with(level, Push::new().priority(level)).unwrap();
        }
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let pool = Pool::builder(q.clone()).workers(1).spawn({
            let seen = seen.clone();
            move |job| {
                seen.lock().unwrap().push(job.item);
                async { Ok(()) }
            }
        });
        q.wait_empty().await;
        pool.shutdown(Duration::from_secs(1)).await;
        assert_eq!(*seen.lock().unwrap(), [7, 7, 3, 3, 1, 0]);
    });
}
