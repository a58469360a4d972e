//! One job, written once, on every store: the same generic function runs a thumbnail job
//! (retries, permanent failures) and then the operator API (dead letters page by page,
//! redrive, redrive_all, purge, purge_dead_letters, cancel) on the memory store, a SQLite
//! file and (feature `postgres`, with a server) Postgres. Only the line that opens the queue
//! differs. The function's future is `tokio::spawn`ed, so it must be `Send` for any store.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use leaseq_async::{
    AdminError, Codec, CodecError, InMemory, ItemState, JobError, Page, Push, RedriveError, Store,
};
use leaseq_sqlite::Sqlite;
use leaseq_test_kit::core_queue::quick_retries as config;
use leaseq_test_kit::runtime::spawned;
use leaseq_tokio::{LeaseQueue, Pool, QueueBuilder, TokioRuntime};

const JOBS: u32 = 60;

/// A thumbnail to make.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Thumb(u32);

impl Thumb {
    /// Every tenth image is broken for good (n % 10 == 3).
    fn is_broken(&self) -> bool {
        self.0 % 10 == 3
    }
    /// Some fail once, then work (n % 10 == 7).
    fn is_flaky(&self) -> bool {
        self.0 % 10 == 7
    }
}

/// Four bytes, little-endian: a codec for the durable stores.
struct ThumbCodec;

impl Codec<Thumb> for ThumbCodec {
    fn encode(&self, item: &Thumb) -> Result<Vec<u8>, CodecError> {
        Ok(item.0.to_le_bytes().to_vec())
    }
    fn decode(&self, bytes: &[u8]) -> Result<Thumb, CodecError> {
        let b: [u8; 4] = bytes
            .try_into()
            .map_err(|_| CodecError(format!("{} bytes, not 4", bytes.len())))?;
        Ok(Thumb(u32::from_le_bytes(b)))
    }
}

/// What the job saw, for the caller to compare across stores.
#[derive(Debug, PartialEq, Eq)]
struct Report {
    acked: u64,
    dead: Vec<u32>,
    handled: u32,
}

/// The job, written once for every store.
async fn thumbnails<S>(queue: LeaseQueue<Thumb, S>) -> Report
where
    S: Store<Thumb, Runtime = TokioRuntime>,
{
    let ids = queue.push_batch((0..JOBS).map(Thumb)).await.unwrap();
    assert_eq!(ids.len(), JOBS as usize);
    let handled = Arc::new(AtomicU32::new(0));
    let pool = Pool::builder(queue.clone()).workers(4).spawn({
        let handled = handled.clone();
        move |job| {
            let handled = handled.clone();
            async move {
                handled.fetch_add(1, Ordering::SeqCst);
                if job.item.is_broken() {
                    return Err(JobError::permanent("bad image"));
                }
                if job.item.is_flaky() && job.attempt == 1 {
                    return Err(JobError::retry("storage busy"));
                }
                Ok(())
            }
        }
    });
    queue.wait_empty().await;
    pool.shutdown(Duration::from_secs(10)).await;
    let acked = queue.refresh_stats().await.unwrap().acked;

    // The dead letters, two per page, each item decoded, with its error.
    let mut dead = Vec::new();
    let mut page = Page::first(2);
    loop {
        let letters = queue.dead_letters(page).await.unwrap();
        for letter in &letters {
            assert_eq!(letter.last_error.as_deref(), Some("bad image"));
            dead.push((letter.id, letter.item.clone().unwrap().0));
        }
        match letters.last() {
            Some(last) if letters.len() == page.limit => page = page.next(last.id),
            _ => break,
        }
    }
    let dead_items: Vec<u32> = dead.iter().map(|&(_, n)| n).collect();

    // Redrive one, then the rest; a second redrive of the same id is refused, typed.
    let (first, _) = dead[0];
    assert_eq!(queue.redrive(first).await, Ok(first));
    assert_eq!(
        queue.redrive(first).await,
        Err(AdminError::Refused(RedriveError::NotFound(first)))
    );
    assert_eq!(queue.redrive_all().await.unwrap(), dead.len() as u64 - 1);
    assert!(queue.dead_letters(Page::ALL).await.unwrap().is_empty());

    // Delayed items and the redriven ones are live; purge removes them all.
    for n in 0..3 {
        let later = Push::new().delay(Duration::from_secs(3600));
        queue.push_with(Thumb(1000 + n), later).await.unwrap();
    }
    let live = queue.peek(Page::ALL).await.unwrap();
    let delayed = live
        .iter()
        .filter(|v| v.state == ItemState::Delayed)
        .count();
    assert_eq!((live.len(), delayed), (dead.len() + 3, 3), "{live:?}");
    assert_eq!(queue.purge().await.unwrap(), dead.len() as u64 + 3);
    assert!(queue.peek(Page::ALL).await.unwrap().is_empty());

    // One poisoned item, purged from the dead letters.
    queue.push(Thumb(2000)).await.unwrap();
    let d = queue.receive().await.unwrap();
    d.dead_letter("corrupt header").await.unwrap();
    assert_eq!(queue.purge_dead_letters().await.unwrap(), 1);
    assert!(queue.dead_letters(Page::ALL).await.unwrap().is_empty());

    // Cancel hands the item back; a second cancel is refused, typed.
    let id = queue.push(Thumb(3000)).await.unwrap();
    assert_eq!(queue.cancel(id).await, Ok(Thumb(3000)));
    assert!(matches!(
        queue.cancel(id).await,
        Err(AdminError::Refused(_))
    ));

    // A consumer of its own (no pool): receive, extend, nack, ack (waiting and not).
    let id = queue.push(Thumb(4000)).await.unwrap();
    let d = queue.receive().await.unwrap();
    let mut d = d;
    d.extend(Duration::from_secs(30)).await.unwrap();
    d.nack("try again").await.unwrap();
    let consumer = queue.consumer(4);
    let d = consumer.receive().await.unwrap();
    assert_eq!((d.id(), d.attempt()), (id, 2));
    d.ack_nowait().await.unwrap();
    consumer.stop().await;

    Report {
        acked,
        dead: dead_items,
        handled: handled.load(Ordering::SeqCst),
    }
}

/// What every store must report: the broken ones dead, the rest acked, the flaky ones
/// handled twice.
fn expected() -> Report {
    let all: Vec<Thumb> = (0..JOBS).map(Thumb).collect();
    let broken: BTreeSet<u32> = all.iter().filter(|t| t.is_broken()).map(|t| t.0).collect();
    let flaky = all.iter().filter(|t| t.is_flaky()).count() as u32;
    Report {
        acked: u64::from(JOBS) - broken.len() as u64,
        dead: broken.into_iter().collect(),
        handled: JOBS + flaky,
    }
}

/// The queue's builder: the config above, named `thumbnails`.
fn builder() -> QueueBuilder<Thumb, TokioRuntime> {
    LeaseQueue::builder(config()).name("thumbnails")
}

#[test]
fn the_same_job_on_the_memory_store() {
    let report = spawned(async { thumbnails(builder().open(InMemory).await.unwrap()).await });
    assert_eq!(report, expected());
}

#[test]
fn the_same_job_on_a_sqlite_file() {
    let path = leaseq_test_kit::sqlite::temp("one-api");
    let file = Sqlite::file(&path);
    let report =
        spawned(async { thumbnails(builder().codec(ThumbCodec).open(file).await.unwrap()).await });
    assert_eq!(report, expected());
    leaseq_test_kit::sqlite::remove(&path);
}

#[cfg(feature = "postgres")]
#[test]
fn the_same_job_on_postgres() {
    let server = leaseq_test_kit::pg::server();
    let Some(store) = server.map(leaseq_postgres::Postgres::url) else {
        return;
    };
    let named = builder().name(leaseq_test_kit::pg::unique("one-api"));
    let report =
        spawned(async { thumbnails(named.codec(ThumbCodec).open(store).await.unwrap()).await });
    assert_eq!(report, expected());
}
