//! The record of finished jobs in a queue file (`Options::retention`, format 6): each
//! outcome (ack, batch ack, a last failure, a lease run out, an expiry, a cancel) written
//! with its kind, attempts and reason in the commit of its finish; reads paged and filtered
//! by kind and outcome, through the queue and `FileView`; removal by age by the store's
//! upkeep; nothing kept without the option; a format-5 file migrated. (Real time: the
//! writer is a thread. Waits are for at least a deadline, then polled with a generous
//! bound: no pass or fail hangs on how fast the machine is.)

mod support;

use std::time::{Duration, Instant};

use leaseq_async::{Config, FinishOutcome, Finished, HistoryQuery, Push, Reason};
use leaseq_sqlite::{BytesCodec, FileView, Options, FORMAT_VERSION};
use leaseq_test_kit::envelope::envelope;
use leaseq_test_kit::steps::{assert_history_pages, outcomes};

const WINDOW: Duration = Duration::from_secs(3600);

fn open(path: &std::path::Path, options: Options) -> support::Queue {
    let config = Config::new(Duration::from_millis(300)).with_max_attempts(2);
    leaseq_test_kit::sqlite::open_with(path, config, BytesCodec, options).unwrap()
}

async fn sleep(d: Duration) {
    smol::Timer::after(d).await;
}

async fn all(q: &support::Queue) -> Vec<Finished> {
    q.history(HistoryQuery::first(100)).await.unwrap()
}

/// The record once `done` says it is complete (polled: the driver journals what a deadline
/// did on its own schedule), within 10 s.
async fn record_when(q: &support::Queue, done: impl Fn(&[Finished]) -> bool) -> Vec<Finished> {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let record = all(q).await;
        if done(&record) || Instant::now() > until {
            return record;
        }
        sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn every_finish_is_recorded_in_the_file() {
    let path = support::temp("history-outcomes");
    let q = open(&path, Options::new().retention(WINDOW));
    smol::block_on(async {
        let acked = q.push(envelope("email", "{}")).await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        let failed = q.push(envelope("report", "{}")).await.unwrap();
        q.receive().await.unwrap().nack("first").await.unwrap();
        q.receive().await.unwrap().nack("second").await.unwrap();
        let lost = q.push(envelope("report", "{}")).await.unwrap();
        for _ in 0..2 {
            let d = q.receive().await.unwrap();
            sleep(Duration::from_millis(400)).await;
            drop(d);
        }
        record_when(&q, |r| r.len() == 3).await;
        let expired = q
            .push_with(
                envelope("email", "{}"),
                Push::new().ttl(Duration::from_millis(50)),
            )
            .await
            .unwrap();
        record_when(&q, |r| r.len() == 4).await;
        let cancelled = q.push(envelope("email", "{}")).await.unwrap();
        q.cancel(cancelled).await.unwrap();
        q.push(b"\0raw".to_vec()).await.unwrap();
        q.push(envelope("batch", "{}")).await.unwrap();
        let a = q.receive().await.unwrap();
        let b = q.receive().await.unwrap();
        assert!(q.ack_batch(vec![a, b]).await.all_accepted());

        let record = all(&q).await;
        let seen = outcomes(&record);
        let dead = FinishOutcome::DeadLettered;
        assert_eq!(
            &seen[..5],
            &[
                (acked, Some("email"), FinishOutcome::Acked, 1, None),
                (failed, Some("report"), dead, 2, Some(Reason::Nacked)),
                (lost, Some("report"), dead, 2, Some(Reason::LeaseExpired)),
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
        assert_eq!(record.len(), 7, "{record:?}");
        assert!(record[5..]
            .iter()
            .all(|f| f.outcome == FinishOutcome::Acked));
        let kinds: Vec<_> = record[5..].iter().map(|f| f.kind.as_deref()).collect();
        assert!(
            kinds.contains(&Some("batch")) && kinds.contains(&None),
            "{kinds:?}"
        );
        assert_eq!(record[1].last_error.as_deref(), Some("second"));
        assert!(record.windows(2).all(|w| w[0].seq < w[1].seq));
        // The file says the same to a reader of its own.
        let view = FileView::open(&path).unwrap();
        assert_eq!(view.history(&HistoryQuery::first(100)).unwrap(), record);
        drop(view);
        q.close().await.unwrap();
    });
    drop(q);
    support::remove(&path);
}

#[test]
fn reads_are_paged_and_filtered() {
    let path = support::temp("history-pages");
    let q = open(&path, Options::new().retention(WINDOW));
    smol::block_on(async {
        for n in 0..5 {
            let kind = if n % 2 == 0 { "even" } else { "odd" };
            q.push(envelope(kind, "{}")).await.unwrap();
            q.receive().await.unwrap().ack().await.unwrap();
        }
        let cancelled = q.push(envelope("even", "{}")).await.unwrap();
        q.cancel(cancelled).await.unwrap();
        let even = HistoryQuery::first(10).kind("even");
        assert_eq!(q.history(even.clone()).await.unwrap().len(), 4);
        let even_acked = even.outcome(FinishOutcome::Acked);
        assert_eq!(q.history(even_acked).await.unwrap().len(), 3);
        let cancels = HistoryQuery::first(10).outcome(FinishOutcome::Cancelled);
        assert_eq!(q.history(cancels).await.unwrap()[0].id, cancelled);
        assert_history_pages(&q, 2, 6).await;
        q.close().await.unwrap();
    });
    drop(q);
    support::remove(&path);
}

#[test]
fn the_upkeep_removes_entries_once_their_window_has_passed() {
    let path = support::temp("history-age");
    let window = Duration::from_secs(2);
    let q = open(&path, Options::new().retention(window));
    smol::block_on(async {
        q.push(envelope("a", "{}")).await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        sleep(window / 2).await;
        q.push(envelope("b", "{}")).await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        assert_eq!(all(&q).await.len(), 2);
        // The first goes once its window has passed; the second, a second younger, later.
        let left = record_when(&q, |r| r.len() < 2).await;
        assert_eq!(left.len(), 1, "{left:?}");
        assert_eq!(left[0].kind.as_deref(), Some("b"));
        assert!(record_when(&q, |r| r.is_empty()).await.is_empty());
        q.close().await.unwrap();
    });
    drop(q);
    support::remove(&path);
}

#[test]
fn a_reopen_within_the_window_keeps_the_last_run_s_record() {
    let path = support::temp("history-reopen");
    let q = open(&path, Options::new().retention(WINDOW));
    smol::block_on(async {
        q.push(envelope("a", "{}")).await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        q.close().await.unwrap();
    });
    drop(q);
    // The next run on a clock whose epoch is after the first run's finish (as a restarted
    // process's is): the upkeep's removal by age keeps what is younger than the window.
    let ex = std::sync::Arc::new(smol::Executor::new());
    let rt = leaseq_smol::SmolRuntime::with_executor(ex.clone());
    smol::block_on(ex.run(async {
        let q = leaseq_async::LeaseQueue::<Vec<u8>, _, _>::builder(Config::new(
            Duration::from_secs(30),
        ))
        .runtime(rt)
        .codec(BytesCodec)
        .open(leaseq_sqlite::Sqlite::file(&path).options(Options::new().retention(WINDOW)))
        .await
        .unwrap();
        q.push(envelope("b", "{}")).await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        // The upkeep's first removal has run once a later finish is recorded after it.
        sleep(Duration::from_millis(100)).await;
        q.push(envelope("c", "{}")).await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        let kinds: Vec<_> = q
            .history(HistoryQuery::first(10))
            .await
            .unwrap()
            .into_iter()
            .map(|f| f.kind)
            .collect();
        assert_eq!(
            kinds,
            [Some("a".to_string()), Some("b".into()), Some("c".into())]
        );
        q.close().await.unwrap();
    }));
    support::remove(&path);
}

#[test]
fn without_retention_nothing_is_kept() {
    let path = support::temp("history-off");
    let q = support::open_default(&path).unwrap();
    smol::block_on(async {
        q.push(vec![1]).await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        assert!(q.history(HistoryQuery::first(10)).await.unwrap().is_empty());
        q.close().await.unwrap();
    });
    drop(q);
    support::remove(&path);
}

#[test]
fn a_format_5_file_is_migrated_to_6() {
    let path = support::temp("history-v5");
    let q = support::open_default(&path).unwrap();
    smol::block_on(async {
        q.push(vec![1]).await.unwrap();
        q.close().await.unwrap();
    });
    drop(q);
    std::thread::sleep(Duration::from_millis(50));
    {
        // What format 5 was: no history table.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("DROP TABLE history; PRAGMA user_version = 5;")
            .unwrap();
    }
    let view = FileView::open(&path).unwrap();
    assert!(view.history(&HistoryQuery::first(10)).unwrap().is_empty());
    drop(view);
    let q = support::open_with(&path, Options::new().retention(WINDOW)).unwrap();
    smol::block_on(async {
        q.receive().await.unwrap().ack().await.unwrap();
        assert_eq!(q.history(HistoryQuery::first(10)).await.unwrap().len(), 1);
        q.close().await.unwrap();
    });
    drop(q);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(support::user_version(&path), FORMAT_VERSION);
    support::remove(&path);
}

/// A crash while commits fail (the write lock held by another connection): an ack that never committed leaves no entry (the entry is an
/// op of the ack's own commit), and its item is back after the reopen; what committed before
/// is kept. (`halt` ends the writer as a dying process would.)
#[cfg(feature = "fault-injection")]
#[test]
fn a_finish_that_did_not_commit_leaves_no_entry() {
    let path = support::temp("history-crash");
    let options = || {
        Options::new()
            .retention(WINDOW)
            .commit_timeout(Duration::from_millis(200))
            .busy_timeout(Duration::from_millis(20))
    };
    let q = support::open_with(&path, options()).unwrap();
    smol::block_on(async {
        let kept = q.push(envelope("a", "{}")).await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        let lost = q.push(envelope("b", "{}")).await.unwrap();
        let d = q.receive().await.unwrap();
        assert_eq!(d.id(), lost);
        // Another program holds the file's write lock: every commit fails from here on.
        let other = rusqlite::Connection::open(&path).unwrap();
        other.execute_batch("BEGIN IMMEDIATE;").unwrap();
        let before = q.store().commit_failures();
        let r = d.ack().await;
        assert!(
            r.is_err_and(|e| e.is_outcome_unknown()),
            "the ack is not committed"
        );
        assert!(q.store().commit_failures() > before);
        q.store().halt();
        drop(other);
        let _ = kept;
    });
    drop(q);
    let view = FileView::open(&path).unwrap();
    let record = view.history(&HistoryQuery::first(10)).unwrap();
    assert_eq!(record.len(), 1, "{record:?}");
    assert_eq!(record[0].kind.as_deref(), Some("a"));
    drop(view);
    let q = support::open_with(&path, options()).unwrap();
    smol::block_on(async {
        // The item whose ack never landed is back, its entry still absent.
        let d = q.receive().await.unwrap();
        assert_eq!(d.item(), &envelope("b", "{}"));
        assert_eq!(all(&q).await.len(), 1);
        d.ack().await.unwrap();
        let record = all(&q).await;
        assert_eq!(record.len(), 2);
        assert_eq!(record[1].kind.as_deref(), Some("b"));
        q.close().await.unwrap();
    });
    drop(q);
    support::remove(&path);
}
