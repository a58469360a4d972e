//! The in-memory store's record of finished jobs (`QueueBuilder::retention`), on virtual
//! time: each way an item finishes (ack, one-by-one and batched; a last failed attempt; a
//! lease run out; an expiry; a cancel) writes one entry with its kind, outcome, attempts and
//! reason; reads are paged and filtered by kind and outcome; the driver removes the entries
//! once their window has passed; a queue without the option keeps nothing.

use std::future::Future;
use std::time::Duration;

use leaseq_async::{
    Config, FinishOutcome, HistoryQuery, ItemKind, LeaseQueue, Push, Reason, Runtime, SimRuntime,
};
use leaseq_test_kit::steps::{assert_history_pages, outcomes};

#[derive(Clone, Debug)]
struct Job(&'static str);

impl ItemKind for Job {
    fn item_kind(&self) -> Option<&str> {
        Some(self.0)
    }
}

const WINDOW: Duration = Duration::from_secs(600);

fn sim<F: Future<Output = ()>>(test: impl FnOnce(SimRuntime) -> F) {
    let rt = SimRuntime::new();
    rt.block_on(test(rt.clone()));
}

fn queue(rt: &SimRuntime) -> LeaseQueue<Job, SimRuntime> {
    LeaseQueue::builder(Config::new(Duration::from_secs(30)).with_max_attempts(2))
        .runtime(rt.clone())
        .retention_by_kind(WINDOW)
        .build()
        .unwrap()
}

async fn sleep(rt: &SimRuntime, d: Duration) {
    rt.sleep_until(rt.now().saturating_add(d)).await;
}

async fn all(q: &LeaseQueue<Job, SimRuntime>) -> Vec<leaseq_async::Finished> {
    q.history(HistoryQuery::first(100)).await.unwrap()
}

#[test]
fn every_finish_is_recorded_with_its_fields() {
    sim(|rt| async move {
        let q = queue(&rt);
        let acked = q.push(Job("email")).await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        // Two attempts, the last a failure: dead-lettered with the error.
        let failed = q.push(Job("report")).await.unwrap();
        q.receive().await.unwrap().nack("first").await.unwrap();
        sleep(&rt, Duration::from_secs(60)).await;
        q.receive().await.unwrap().nack("second").await.unwrap();
        // A lease that runs out twice.
        let lost = q.push(Job("report")).await.unwrap();
        for _ in 0..2 {
            let d = q.receive().await.unwrap();
            sleep(&rt, Duration::from_secs(31)).await;
            drop(d);
            sleep(&rt, Duration::from_secs(60)).await;
        }
        let expired = q
            .push_with(Job("email"), Push::new().ttl(Duration::from_secs(5)))
            .await
            .unwrap();
        sleep(&rt, Duration::from_secs(6)).await;
        let cancelled = q.push(Job("email")).await.unwrap();
        q.cancel(cancelled).await.unwrap();
        // Batched acks.
        q.push(Job("batch")).await.unwrap();
        q.push(Job("batch")).await.unwrap();
        let a = q.receive().await.unwrap();
        let b = q.receive().await.unwrap();
        assert!(q.ack_batch(vec![a, b]).await.all_accepted());

        let record = all(&q).await;
        let seen = outcomes(&record);
        assert_eq!(
            &seen[..5],
            &[
                (acked, Some("email"), FinishOutcome::Acked, 1, None),
                (
                    failed,
                    Some("report"),
                    FinishOutcome::DeadLettered,
                    2,
                    Some(Reason::Nacked)
                ),
                (
                    lost,
                    Some("report"),
                    FinishOutcome::DeadLettered,
                    2,
                    Some(Reason::LeaseExpired)
                ),
                (
                    expired,
                    Some("email"),
                    FinishOutcome::Expired,
                    0,
                    Some(Reason::Expired)
                ),
                (cancelled, Some("email"), FinishOutcome::Cancelled, 0, None),
            ]
        );
        assert_eq!(record.len(), 7);
        assert!(record[5..]
            .iter()
            .all(|f| f.outcome == FinishOutcome::Acked));
        assert_eq!(record[1].last_error.as_deref(), Some("second"));
        // Numbered in order, finish times in order.
        assert!(record.windows(2).all(|w| w[0].seq < w[1].seq));
        assert!(record
            .windows(2)
            .all(|w| w[0].finished_at <= w[1].finished_at));
    });
}

#[test]
fn reads_are_paged_and_filtered_by_kind_and_outcome() {
    sim(|rt| async move {
        let q = queue(&rt);
        for n in 0..5 {
            q.push(Job(if n % 2 == 0 { "even" } else { "odd" }))
                .await
                .unwrap();
            q.receive().await.unwrap().ack().await.unwrap();
        }
        let cancelled = q.push(Job("even")).await.unwrap();
        q.cancel(cancelled).await.unwrap();

        let even = q
            .history(HistoryQuery::first(10).kind("even"))
            .await
            .unwrap();
        assert_eq!(even.len(), 4);
        let even_acked = HistoryQuery::first(10)
            .kind("even")
            .outcome(FinishOutcome::Acked);
        assert_eq!(q.history(even_acked).await.unwrap().len(), 3);
        let cancels = HistoryQuery::first(10).outcome(FinishOutcome::Cancelled);
        assert_eq!(q.history(cancels).await.unwrap()[0].id, cancelled);
        assert!(q
            .history(HistoryQuery::first(10).kind("none"))
            .await
            .unwrap()
            .is_empty());

        // Pages of two.
        assert_history_pages(&q, 2, 6).await;
    });
}

#[test]
fn the_driver_removes_entries_once_their_window_has_passed() {
    sim(|rt| async move {
        let q = queue(&rt);
        q.push(Job("a")).await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        sleep(&rt, WINDOW / 2).await;
        q.push(Job("b")).await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        assert_eq!(all(&q).await.len(), 2);
        // Just past the first window: the first entry is gone, the second kept.
        sleep(&rt, WINDOW / 2 + Duration::from_secs(1)).await;
        let left = all(&q).await;
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].kind.as_deref(), Some("b"));
        sleep(&rt, WINDOW / 2).await;
        assert!(all(&q).await.is_empty());
    });
}

#[test]
fn a_queue_without_retention_keeps_nothing() {
    sim(|rt| async move {
        let q: LeaseQueue<u32, SimRuntime> =
            LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(30))).unwrap();
        q.push(1).await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        assert!(q.history(HistoryQuery::first(10)).await.unwrap().is_empty());
    });
}

#[test]
fn retention_without_kinds_records_no_kind() {
    sim(|rt| async move {
        let q: LeaseQueue<u32, SimRuntime> =
            LeaseQueue::builder(Config::new(Duration::from_secs(30)))
                .runtime(rt.clone())
                .retention(WINDOW)
                .build()
                .unwrap();
        q.push(1).await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        let record = q.history(HistoryQuery::first(10)).await.unwrap();
        assert_eq!(record.len(), 1);
        assert_eq!(record[0].kind, None);
    });
}

/// Router jobs (bytes in the envelope format) are recorded with their kind, read by the
/// same `ItemKind` that `DeadFilter::kind` uses.
#[test]
fn router_jobs_are_recorded_with_their_kind() {
    use leaseq_test_kit::envelope::envelope;
    sim(|rt| async move {
        let q: LeaseQueue<Vec<u8>, SimRuntime> =
            LeaseQueue::builder(Config::new(Duration::from_secs(30)).with_max_attempts(1))
                .runtime(rt.clone())
                .retention_by_kind(WINDOW)
                .build()
                .unwrap();
        q.push(envelope("email", "{}")).await.unwrap();
        q.push(envelope("sms", "{}")).await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        q.receive().await.unwrap().nack("no").await.unwrap();
        let dead = HistoryQuery::first(10)
            .kind("sms")
            .outcome(FinishOutcome::DeadLettered);
        let record = q.history(dead).await.unwrap();
        assert_eq!(record.len(), 1);
        assert_eq!(record[0].last_error.as_deref(), Some("no"));
        let email = q
            .history(HistoryQuery::first(10).kind("email"))
            .await
            .unwrap();
        assert_eq!(email[0].outcome, FinishOutcome::Acked);
    });
}

/// A dead letter purged at once (before the driver's step records it) keeps its entry:
/// removals of dead letters record what the driver has not yet.
#[test]
fn a_dead_letter_purged_at_once_keeps_its_entry() {
    sim(|rt| async move {
        let q: LeaseQueue<Job, SimRuntime> =
            LeaseQueue::builder(Config::new(Duration::from_secs(30)).with_max_attempts(1))
                .runtime(rt.clone())
                .retention_by_kind(WINDOW)
                .build()
                .unwrap();
        q.push(Job("pdf")).await.unwrap();
        q.receive().await.unwrap().nack("broken").await.unwrap();
        let purged = q.purge_dead_matching(leaseq_async::DeadFilter::all()).await;
        assert_eq!(purged, Ok(1));
        let record = all(&q).await;
        assert_eq!(record.len(), 1);
        assert_eq!(record[0].kind.as_deref(), Some("pdf"));
        assert_eq!(record[0].outcome, FinishOutcome::DeadLettered);
    });
}
