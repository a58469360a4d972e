//! The record of finished jobs (issue 30) on PostgreSQL: with `Options::retention`, each
//! outcome (acked, dead-lettered by a nack, a poison dead letter and a lease run out,
//! cancelled, expired) is recorded with its kind, attempts, times, duration, reason and last
//! error; read paged and filtered by kind and outcome through the store and the inspector;
//! the driver removes entries past the window (a short one: the table returns to its size).
//! The schema step, and nothing written without retention: `history_schema.rs`.

use leaseq_test_kit::envelope::envelope;
use leaseq_test_kit::pg as common;

use std::time::{Duration, Instant, SystemTime};

use leaseq_async::{Config, Nacked, Push, Reason};
use leaseq_postgres::{
    BytesCodec, FinishOutcome, Finished, HistoryQuery, Options, PgInspector, PgQueue, Postgres,
};

use common::{receive, PATIENCE, SCHEMA};

/// A queue `history-<prefix>-..` with `options`, attempts at most 2.
async fn open(url: &str, queue: &str, options: Options) -> PgQueue<Vec<u8>> {
    leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(
        Config::new(Duration::from_secs(30)).with_max_attempts(2),
    )
    .name(queue.to_string())
    .codec(BytesCodec)
    .open(Postgres::url(url).options(options))
    .await
    .expect("open")
}

/// [`open`] with the record kept for an hour.
async fn open_kept(url: &str, queue: &str) -> PgQueue<Vec<u8>> {
    open(
        url,
        queue,
        common::options().retention(Duration::from_secs(3600)),
    )
    .await
}

/// Every entry of the queue's record.
async fn all(q: &PgQueue<Vec<u8>>) -> Vec<Finished> {
    q.store()
        .history(&HistoryQuery::first(usize::MAX))
        .await
        .expect("history")
}

/// Waits until the record holds `n` entries.
async fn until_recorded(q: &PgQueue<Vec<u8>>, n: usize) -> Vec<Finished> {
    let start = Instant::now();
    loop {
        let got = all(q).await;
        if got.len() >= n {
            return got;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "only {} of {n}: {got:?}",
            got.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn each_outcome_is_recorded_with_its_fields() {
    common::with_server(|url| async move {
        let queue = common::unique("history-outcomes");
        let q = open_kept(&url, &queue).await;
        let before = SystemTime::now() - Duration::from_secs(5);

        // Acked on its first attempt.
        let acked = q.push(envelope("email", "{}")).await.expect("push");
        let d = receive(&q).await;
        assert_eq!(d.id(), acked);
        d.ack().await.expect("ack");
        // Nacked twice: dead-lettered with the last error.
        let nacked = q.push(envelope("fax", "{\"n\":1}")).await.expect("push");
        let d = receive(&q).await;
        assert!(matches!(
            d.nack_with(leaseq_async::Failure::error("busy").retry_after(Duration::ZERO))
                .await
                .expect("nack"),
            Nacked::Retrying { .. }
        ));
        let d = receive(&q).await;
        assert_eq!(d.attempt(), 2);
        let r = d.nack("line dead").await.expect("nack");
        assert!(matches!(r, Nacked::DeadLettered { .. }), "{r:?}");
        // Poison: straight to the dead letters.
        let poison = q.push(b"not a job".to_vec()).await.expect("push");
        receive(&q)
            .await
            .dead_letter("cannot parse")
            .await
            .expect("dead letter");
        // Cancelled while it waited.
        let waiting = Push::new().delay(Duration::from_secs(600));
        let cancelled = q.push_with(envelope("email", "{}"), waiting).await;
        let cancelled = cancelled.expect("push");
        q.cancel(cancelled).await.expect("cancel");
        // Expired while it waited (nobody receives from here on).
        let short_lived = Push::new().ttl(Duration::from_millis(300));
        let expired = q.push_with(envelope("report", "{}"), short_lived).await;
        let expired = expired.expect("push");

        let got = until_recorded(&q, 5).await;
        let after = SystemTime::now() + Duration::from_secs(5);
        let by_id = |id| got.iter().find(|f| f.id == id).expect("an entry");
        assert_eq!(got.len(), 5, "{got:#?}");

        let a = by_id(acked);
        assert_eq!(a.outcome, FinishOutcome::Acked);
        assert_eq!(
            (a.kind.as_deref(), a.attempts, a.reason),
            (Some("email"), 1, None)
        );
        let (pushed, started) = (a.pushed_at.expect("pushed"), a.started_at.expect("started"));
        assert!(before <= pushed && pushed <= started && started <= a.finished_at);
        assert!(a.finished_at <= after);
        // Run once: its one attempt's duration is from its first start to its finish (the
        // claim reads the clock once for the lease and once for the first start).
        let ran = a.duration.expect("a duration");
        let whole = a.finished_at.duration_since(started).expect("in order");
        assert!(
            ran.abs_diff(whole) < Duration::from_millis(1),
            "{ran:?} {whole:?}"
        );
        assert_eq!(a.last_error, None);

        let n = by_id(nacked);
        assert_eq!(n.outcome, FinishOutcome::DeadLettered);
        assert_eq!((n.kind.as_deref(), n.attempts), (Some("fax"), 2));
        assert_eq!(n.reason, Some(Reason::Nacked));
        assert_eq!(n.last_error.as_deref(), Some("line dead"));
        // First started at the first attempt, its duration the last attempt's.
        let first = n.started_at.expect("started");
        assert!(n.duration.expect("ran") < n.finished_at.duration_since(first).expect("order"));

        let p = by_id(poison);
        assert_eq!(
            (p.outcome, p.kind.as_deref()),
            (FinishOutcome::DeadLettered, None)
        );
        assert_eq!((p.reason, p.attempts), (Some(Reason::Rejected), 1));
        assert_eq!(p.last_error.as_deref(), Some("cannot parse"));

        let c = by_id(cancelled);
        assert_eq!(
            (c.outcome, c.kind.as_deref()),
            (FinishOutcome::Cancelled, Some("email"))
        );
        assert_eq!((c.attempts, c.started_at, c.duration), (0, None, None));
        assert!(c.pushed_at.is_some());

        let e = by_id(expired);
        assert_eq!(
            (e.outcome, e.reason),
            (FinishOutcome::Expired, Some(Reason::Expired))
        );
        assert_eq!(
            (e.kind.as_deref(), e.attempts, e.duration),
            (Some("report"), 0, None)
        );

        // Entries are numbered in the order they were written.
        assert!(got.windows(2).all(|w| w[0].seq < w[1].seq));
        q.close().await.expect("close");
    });
}

#[test]
fn a_lease_that_runs_out_on_its_last_attempt_is_recorded_by_the_rescuer() {
    common::with_server(|url| async move {
        let queue = common::unique("history-rescue");
        let q = leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(
            Config::new(Duration::from_millis(300)).with_max_attempts(1),
        )
        .name(queue.clone())
        .codec(BytesCodec)
        .open(
            Postgres::url(&url).options(
                common::options()
                    .retention(Duration::from_secs(3600))
                    .heartbeat_every(Duration::from_secs(3600)),
            ),
        )
        .await
        .expect("open");
        let id = q.push(envelope("slow", "{}")).await.expect("push");
        // Held past its visibility (the heartbeat hardly ever beats): the rescuer takes the
        // lease back, on its last attempt to the dead letters.
        let d = receive(&q).await;
        let got = until_recorded(&q, 1).await;
        drop(d);
        assert_eq!(
            (got[0].id, got[0].outcome),
            (id, FinishOutcome::DeadLettered)
        );
        assert_eq!(
            (got[0].reason, got[0].attempts),
            (Some(Reason::LeaseExpired), 1)
        );
        assert_eq!(got[0].kind.as_deref(), Some("slow"));
    });
}

#[test]
fn the_record_is_paged_and_filtered_by_kind_and_outcome() {
    common::with_server(|url| async move {
        let queue = common::unique("history-pages");
        let q = open_kept(&url, &queue).await;
        for i in 0..7 {
            let kind = if i % 2 == 0 { "email" } else { "fax" };
            q.push(envelope(kind, "{}")).await.expect("push");
            let d = receive(&q).await;
            if i % 3 == 0 {
                d.dead_letter("no").await.expect("dead letter");
            } else {
                d.ack().await.expect("ack");
            }
        }
        q.push(b"plain".to_vec()).await.expect("push");
        receive(&q).await.ack().await.expect("ack");
        let every = until_recorded(&q, 8).await;

        // Pages of 3, in order, the whole record once.
        let mut query = HistoryQuery::first(3);
        let mut paged = Vec::new();
        loop {
            let page = q.store().history(&query).await.expect("page");
            assert!(page.len() <= 3);
            let Some(last) = page.last() else { break };
            query = query.next(last.seq);
            paged.extend(page);
        }
        assert_eq!(paged, every);
        // The queue's operator call reads the same.
        let whole = q.history(HistoryQuery::first(100)).await.expect("queue");
        assert_eq!(whole, every);

        let want = |f: &dyn Fn(&Finished) -> bool| -> Vec<Finished> {
            every.iter().filter(|e| f(e)).cloned().collect()
        };
        let email = HistoryQuery::first(100).kind("email");
        let got = q.store().history(&email).await.expect("by kind");
        assert_eq!(got, want(&|e| e.kind.as_deref() == Some("email")));
        assert_eq!(got.len(), 4);
        let dead_fax = HistoryQuery::first(100)
            .kind("fax")
            .outcome(FinishOutcome::DeadLettered);
        let got = q.store().history(&dead_fax).await.expect("by both");
        assert_eq!(
            got,
            want(&|e| e.kind.as_deref() == Some("fax") && e.outcome == FinishOutcome::DeadLettered)
        );
        assert_eq!(got.len(), 1);
        let acked = HistoryQuery::first(100).outcome(FinishOutcome::Acked);
        assert_eq!(q.store().history(&acked).await.expect("acked").len(), 5);
        // A kind that is a prefix of another's is not it.
        let none = HistoryQuery::first(100).kind("em");
        assert!(q.store().history(&none).await.expect("none").is_empty());

        // The inspector reads the same, page by page, without opening the queue.
        let mut inspector = PgInspector::connect(&url, SCHEMA.name())
            .await
            .expect("inspector");
        let page = inspector
            .history(&queue, &HistoryQuery::first(3).next(every[2].seq))
            .await
            .expect("inspector page");
        assert_eq!(page, every[3..6].to_vec());
        assert_eq!(
            inspector.history(&queue, &email).await.expect("by kind"),
            want(&|e| e.kind.as_deref() == Some("email"))
        );
        // Another queue's record is apart.
        assert!(inspector
            .history("history-other", &HistoryQuery::first(10))
            .await
            .expect("other")
            .is_empty());
        q.close().await.expect("close");
    });
}

#[test]
fn entries_past_the_window_are_removed_by_the_driver() {
    common::with_server(|url| async move {
        let queue = common::unique("history-window");
        let db = common::sql(&url).await;
        let window = Duration::from_secs(3);
        let q = open(&url, &queue, common::options().retention(window)).await;
        let count = || async {
            db.query_one(
                &format!("SELECT count(*) FROM {SCHEMA}.history WHERE queue = $1"),
                &[&queue],
            )
            .await
            .expect("count")
            .get::<_, i64>(0)
        };
        assert_eq!(count().await, 0, "the table's size before");
        for round in 0..2 {
            for _ in 0..20 {
                q.push(envelope("email", "{}")).await.expect("push");
            }
            let batch = q.receive_batch(20).await;
            let mut left = 20 - batch.len();
            for d in batch {
                d.ack().await.expect("ack");
            }
            while left > 0 {
                receive(&q).await.ack().await.expect("ack");
                left -= 1;
            }
            // Written at once; kept until the window has passed since each finish, as the
            // database's clock tells, then removed by the store's driver.
            let n = count().await;
            assert_eq!(n, 20, "round {round}: the entries after the acks");
            let start = Instant::now();
            while count().await > 0 {
                assert!(start.elapsed() < PATIENCE, "round {round}: never removed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let gone = start.elapsed();
            assert!(
                gone + Duration::from_millis(200) >= window,
                "removed after {gone:?}, before the window {window:?}"
            );
        }
        q.close().await.expect("close");
    });
}

#[test]
fn an_ack_in_the_callers_transaction_is_recorded_only_if_it_commits() {
    common::with_server(|url| async move {
        let queue = common::unique("history-ack-in");
        let q = open_kept(&url, &queue).await;
        let mut db = common::sql(&url).await;
        q.push(envelope("email", "{}")).await.expect("push");
        q.push(envelope("fax", "{}")).await.expect("push");
        let first = receive(&q).await;
        let tx = db.transaction().await.expect("begin");
        q.store().ack_in(&tx, first).await.expect("ack in");
        tx.rollback().await.expect("rollback");
        assert!(
            all(&q).await.is_empty(),
            "a rolled-back ack leaves no entry"
        );
        let second = receive(&q).await;
        let id = second.id();
        let tx = db.transaction().await.expect("begin");
        q.store().ack_in(&tx, second).await.expect("ack in");
        tx.commit().await.expect("commit");
        let got = all(&q).await;
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!((got[0].id, got[0].outcome), (id, FinishOutcome::Acked));
    });
}
