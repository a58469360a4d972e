//! Handlers' checkpoints on the memory store (issue 19, part 4), on virtual time: kept
//! across every redelivery (nack, lease expiry, timeout, put-back, dead letter and redrive),
//! dropped when the item leaves for good (ack, cancel, purge, dead letters purged), refused
//! for a stale lease and past the size limit, shown to the operator, and reachable from a
//! pool's `Job`.

use std::time::Duration;

use leaseq_async::{
    Backoff, CheckpointError, Config, ItemTimeout, LeaseQueue, MessageId, Page, Pool, Progress,
    ReceiptError, Runtime, SimRuntime, MAX_PROGRESS_BYTES,
};
use leaseq_test_kit::sim;

fn queue(rt: &SimRuntime, visibility: Duration) -> LeaseQueue<u32, SimRuntime> {
    let config = Config::new(visibility)
        .with_backoff(Backoff::None)
        .with_max_attempts(10);
    LeaseQueue::with_runtime(rt.clone(), config).unwrap()
}

fn bytes(p: Option<Progress>) -> Option<Vec<u8>> {
    p.map(|p| p.as_bytes().to_vec())
}

#[test]
fn a_checkpoint_survives_nack_expiry_and_put_back() {
    sim::run(|rt| async move {
        let q = queue(&rt, Duration::from_secs(5));
        q.try_push(7).unwrap();
        let mut d = q.receive().await.unwrap();
        assert_eq!(d.progress(), None, "nobody checkpointed yet");
        d.checkpoint(b"page 3".to_vec()).await.unwrap();
        assert_eq!(bytes(d.progress()), Some(b"page 3".to_vec()));
        d.nack("crashed").await.unwrap();

        // After a nack.
        let mut d = q.receive().await.unwrap();
        assert_eq!(bytes(d.progress()), Some(b"page 3".to_vec()));
        d.checkpoint(b"page 6".to_vec()).await.unwrap();
        let stale = d;

        // After the lease ran out.
        sim::sleep(&rt, Duration::from_secs(6)).await;
        let d = q.receive().await.unwrap();
        assert_eq!(d.attempt(), 3);
        assert_eq!(bytes(d.progress()), Some(b"page 6".to_vec()));

        // The old holder is refused, and its attempt changes nothing.
        let mut stale = stale;
        assert_eq!(
            stale.checkpoint(b"page 9".to_vec()).await,
            Err(CheckpointError::Stale(ReceiptError::Redelivered(d.id())))
        );
        // After a put-back.
        d.put_back();
        let d = q.receive().await.unwrap();
        assert_eq!(bytes(d.progress()), Some(b"page 6".to_vec()));
        drop(stale);
        drop(d);
        // After a drop (handed back).
        let d = q.receive().await.unwrap();
        assert_eq!(bytes(d.progress()), Some(b"page 6".to_vec()));
        d.ack().await.unwrap();
        assert!(q.checkpoints(Page::ALL).await.unwrap().is_empty());
        q.check_invariants().unwrap();
    });
}

#[test]
fn ack_cancel_and_purge_drop_the_checkpoint_dead_letters_and_redrive_keep_it() {
    sim::run(|rt| async move {
        let q = queue(&rt, Duration::from_secs(5));
        let ids: Vec<MessageId> = (0..4).map(|n| q.try_push(n).unwrap()).collect();
        for _ in 0..4 {
            let mut d = q.receive().await.unwrap();
            let mark = format!("at {}", d.item());
            d.checkpoint(mark.into_bytes()).await.unwrap();
            if *d.item() == 3 {
                d.dead_letter("poison").await.unwrap();
            } else {
                drop(d);
            }
        }
        let shown = q.checkpoints(Page::ALL).await.unwrap();
        assert_eq!(
            shown.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
            ids,
            "the operator sees every checkpoint, the dead letter's too"
        );
        assert_eq!(shown[3].1.as_bytes(), b"at 3");
        // Paged like the other views.
        let page = q.checkpoints(Page::first(1).next(ids[1])).await.unwrap();
        assert_eq!(page.len(), 1);
        assert_eq!(page[0].0, ids[2]);

        // Cancel drops item 0's, a purge item 1's and 2's.
        q.cancel(ids[0]).await.unwrap();
        assert_eq!(q.checkpoints(Page::ALL).await.unwrap().len(), 3);
        assert_eq!(q.purge().await.unwrap(), 2);
        let left = q.checkpoints(Page::ALL).await.unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].0, ids[3]);

        // The dead letter's checkpoint comes back with its redrive.
        q.redrive(ids[3]).await.unwrap();
        let d = q.receive().await.unwrap();
        assert_eq!(bytes(d.progress()), Some(b"at 3".to_vec()));
        d.dead_letter("again").await.unwrap();
        assert_eq!(q.purge_dead_letters().await.unwrap(), 1);
        assert!(q.checkpoints(Page::ALL).await.unwrap().is_empty());
        q.check_invariants().unwrap();
    });
}

#[test]
fn a_filtered_purge_of_dead_letters_keeps_the_other_dead_letters_checkpoints() {
    use leaseq_async::{DeadFilter, Reason};
    sim::run(|rt| async move {
        let q = queue(&rt, Duration::from_secs(5));
        let ids: Vec<MessageId> = (0..2).map(|n| q.try_push(n).unwrap()).collect();
        for _ in 0..2 {
            let mut d = q.receive().await.unwrap();
            d.checkpoint(vec![*d.item() as u8]).await.unwrap();
            if *d.item() == 0 {
                d.dead_letter("bad input").await.unwrap(); // Rejected
            } else {
                // Dead at once as timed out: the failure says do not retry.
                let mut failure = leaseq_async::Failure::timed_out();
                failure.retry = leaseq_async::core::Retry::Never;
                d.nack_with(failure).await.unwrap();
            }
        }
        assert_eq!(q.stats().dead, 2);
        assert_eq!(q.checkpoints(Page::ALL).await.unwrap().len(), 2);
        let rejected = DeadFilter::all().reason(Reason::Rejected);
        assert_eq!(q.purge_dead_matching(rejected).await, Ok(1));
        let left = q.checkpoints(Page::ALL).await.unwrap();
        assert_eq!(
            left.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
            vec![ids[1]],
            "the purged dead letter's checkpoint is gone, the other's kept"
        );
    });
}

#[test]
fn a_checkpoint_too_large_is_refused_typed_and_nothing_is_recorded() {
    sim::run(|rt| async move {
        let q = queue(&rt, Duration::from_secs(5));
        q.try_push(1).unwrap();
        let mut d = q.receive().await.unwrap();
        d.checkpoint(vec![1; MAX_PROGRESS_BYTES]).await.unwrap();
        let r = d.checkpoint(vec![2; MAX_PROGRESS_BYTES + 1]).await;
        assert_eq!(
            r,
            Err(CheckpointError::TooLarge {
                len: MAX_PROGRESS_BYTES + 1,
                max: MAX_PROGRESS_BYTES
            })
        );
        assert!(!r.unwrap_err().is_outcome_unknown());
        drop(d);
        let d = q.receive().await.unwrap();
        assert_eq!(
            d.progress().unwrap().as_bytes(),
            &[1; MAX_PROGRESS_BYTES][..]
        );
        // A settled lease is refused.
        let id = d.id();
        let mut ticketless = d;
        ticketless.extend(Duration::ZERO).await.unwrap();
        assert_eq!(
            ticketless.checkpoint(b"x".to_vec()).await,
            Err(CheckpointError::Stale(ReceiptError::Released(id)))
        );
    });
}

/// A pool's handler resumes from its checkpoint after a timeout; a job kept past its
/// handling is refused (its lease is over).
#[test]
fn a_pool_job_resumes_from_its_checkpoint_after_a_timeout() {
    sim::run(|rt| async move {
        let q = queue(&rt, Duration::from_secs(60));
        q.try_push(10).unwrap();
        let (kept_tx, kept_rx) = futures::channel::mpsc::unbounded();
        let seen = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
        let pool = Pool::builder(q.clone())
            .workers(1)
            .item_timeout(ItemTimeout::Fixed(Duration::from_secs(1)))
            .spawn({
                let (rt, seen) = (rt.clone(), seen.clone());
                move |mut job: leaseq_async::Job<u32>| {
                    let (rt, seen, kept_tx) = (rt.clone(), seen.clone(), kept_tx.clone());
                    async move {
                        let from = job.progress().map_or(0, |p| p.as_bytes()[0]);
                        seen.lock().push(from);
                        // Steps of 300 ms: the first handling times out after step 3.
                        for step in from..job.item as u8 {
                            sim::sleep(&rt, Duration::from_millis(300)).await;
                            job.checkpoint(vec![step + 1]).await.unwrap();
                            if step + 1 == 5 {
                                // Done in the second handling: keep the job past it.
                                kept_tx.unbounded_send(job).unwrap();
                                return Ok(());
                            }
                        }
                        Ok(())
                    }
                }
            });
        q.wait_empty().await;
        let stats = pool.stats();
        assert_eq!((stats.ok, stats.timed_out), (1, 1));
        assert_eq!(
            *seen.lock(),
            vec![0, 3],
            "the second handling began at step 3"
        );
        pool.shutdown(Duration::from_secs(1)).await;

        // The kept job's handling is over: refused, though its item is gone.
        let mut kept_rx = kept_rx;
        let mut job = futures::StreamExt::next(&mut kept_rx).await.unwrap();
        assert!(matches!(
            job.checkpoint(vec![9]).await,
            Err(CheckpointError::Stale(ReceiptError::AlreadyAcked(_)))
        ));
    });
}

#[cfg(feature = "serde")]
#[test]
fn typed_checkpoints_round_trip_with_postcard() {
    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Cursor {
        page: u32,
        token: String,
    }
    sim::run(|rt| async move {
        let q = queue(&rt, Duration::from_secs(5));
        q.try_push(1).unwrap();
        let mut d = q.receive().await.unwrap();
        assert!(d.progress_as::<Cursor>().is_none());
        let at = Cursor {
            page: 4,
            token: "abc".into(),
        };
        d.checkpoint_as(&at).await.unwrap();
        drop(d);
        let d = q.receive().await.unwrap();
        assert_eq!(d.progress_as::<Cursor>().unwrap().unwrap(), at);
    });
}

/// A job moved into a task of its own checkpoints from there while its handler waits for
/// that task.
#[test]
fn a_job_checkpoints_from_another_task() {
    sim::run(|rt| async move {
        let q = queue(&rt, Duration::from_secs(60));
        let id = q.try_push(1).unwrap();
        let pool = Pool::builder(q.clone()).workers(1).spawn({
            let rt = rt.clone();
            move |job: leaseq_async::Job<u32>| {
                let (tx, rx) = futures::channel::oneshot::channel();
                rt.spawn(Box::pin(async move {
                    let mut job = job;
                    let r = job.checkpoint(b"from a task".to_vec()).await;
                    let _ = tx.send((r, job.progress()));
                }));
                async move {
                    let (r, seen) = rx.await.unwrap();
                    r.unwrap();
                    assert_eq!(seen.unwrap().as_bytes(), b"from a task");
                    Err(leaseq_async::JobError::from("again"))
                }
            }
        });
        // Every run fails, to the dead letters at the last attempt: the checkpoint stays.
        sim::sleep(&rt, Duration::from_secs(1)).await;
        let shown = q.checkpoints(Page::ALL).await.unwrap();
        assert_eq!(shown.len(), 1);
        assert_eq!(
            (shown[0].0, shown[0].1.as_bytes()),
            (id, &b"from a task"[..])
        );
        pool.shutdown(Duration::from_secs(1)).await;
    });
}
