//! Steps many queue tests take, on any store.

use std::time::Duration;

use leaseq_async::{
    DeadFilter, Delivery, Failure, FinishOutcome, Finished, HistoryQuery, LeaseQueue, MessageId,
    Page, Push, Reason, Runtime, Store,
};

use crate::envelope::envelope;

/// Receives the next item of `q` and dead-letters it with `error`; returns its attempts.
/// Panics if the queue is closed or the dead-letter call fails.
pub async fn dead_letter_next<T, R, S>(q: &LeaseQueue<T, R, S>, error: &str) -> u32
where
    R: Runtime,
    S: Store<T, Runtime = R>,
{
    q.receive()
        .await
        .expect("a delivery")
        .dead_letter(error)
        .await
        .expect("dead-lettered")
}

/// Four dead letters in `q` (a queue of bytes with one attempt): two kinds and a raw item,
/// nacked out of attempts or rejected: `email a` nacked, `email b` rejected ("bad
/// address"), `sms c` nacked, `raw` nacked.
pub async fn bury_four<R, S>(q: &LeaseQueue<Vec<u8>, R, S>)
where
    R: Runtime,
    S: Store<Vec<u8>, Runtime = R>,
{
    let items = [
        (envelope("email", "a"), true),
        (envelope("email", "b"), false),
        (envelope("sms", "c"), true),
        (b"raw".to_vec(), true),
    ];
    for (item, _) in &items {
        q.push(item.clone()).await.expect("push");
    }
    for _ in &items {
        let d = q.receive().await.expect("a delivery");
        let nack = items.iter().find(|(i, _)| i == d.item()).expect("ours").1;
        if nack {
            d.nack_with(Failure::error("503")).await.expect("nack");
        } else {
            d.dead_letter("bad address").await.expect("dead letter");
        }
    }
}

/// The items of `q`'s dead letters, in id order (each must decode).
pub async fn dead_items<R, S>(q: &LeaseQueue<Vec<u8>, R, S>) -> Vec<Vec<u8>>
where
    R: Runtime,
    S: Store<Vec<u8>, Runtime = R>,
{
    let letters = q.dead_letters(Page::ALL).await.expect("dead letters");
    letters
        .into_iter()
        .map(|l| l.item.expect("decoded"))
        .collect()
}

/// Pushes `item` to `q` a minute ahead (delayed 60 s); its id.
pub async fn push_in_a_minute<R, S>(q: &LeaseQueue<Vec<u8>, R, S>, item: &[u8]) -> MessageId
where
    R: Runtime,
    S: Store<Vec<u8>, Runtime = R>,
{
    q.push_with(item.to_vec(), Push::new().delay(Duration::from_secs(60)))
        .await
        .expect("push delayed")
}

/// What the CLI tests read in `q` (a queue of bytes with one attempt): three dead letters
/// (`email` nacked out of its attempts, `sms` rejected with "no such number", raw bytes
/// `de ad be ef` nacked with "upstream 503"), then `invoice 981` ready and `later` delayed
/// an hour. Each receive waits 15 s at most.
pub async fn cli_fixture<R, S>(q: &LeaseQueue<Vec<u8>, R, S>)
where
    R: Runtime,
    S: Store<Vec<u8>, Runtime = R>,
{
    for item in [
        envelope("email", "{\"to\":17}"),
        envelope("sms", "hi"),
        vec![0xde, 0xad, 0xbe, 0xef],
    ] {
        q.push(item).await.expect("push");
    }
    for _ in 0..3 {
        let d = q
            .receive_timeout(Duration::from_secs(15))
            .await
            .expect("a delivery");
        if d.item().starts_with(b"\x03sms") {
            d.dead_letter("no such number").await.expect("dead letter");
        } else {
            d.nack_with(Failure::error("upstream 503"))
                .await
                .expect("nack");
        }
    }
    q.push(b"invoice 981".to_vec()).await.expect("push");
    q.push_with(
        b"later".to_vec(),
        Push::new().delay(Duration::from_secs(3600)),
    )
    .await
    .expect("push delayed");
}

/// After [`bury_four`] and the redrive of `email a`: asserts that purging kind `sms` takes
/// one dead letter and leaves `email b` and the raw item.
pub async fn purge_sms<R, S>(q: &LeaseQueue<Vec<u8>, R, S>)
where
    R: Runtime,
    S: Store<Vec<u8>, Runtime = R>,
{
    assert_eq!(
        q.purge_dead_matching(DeadFilter::all().kind("sms")).await,
        Ok(1)
    );
    assert_eq!(
        dead_items(q).await,
        vec![envelope("email", "b"), b"raw".to_vec()]
    );
}

/// After [`purge_sms`]: asserts that a kind never matches the raw item (redriving kind
/// `raw` takes none) and that redriving the rejected ones takes `email b`.
pub async fn redrive_rejected<R, S>(q: &LeaseQueue<Vec<u8>, R, S>)
where
    R: Runtime,
    S: Store<Vec<u8>, Runtime = R>,
{
    let raw = DeadFilter::all().kind("raw");
    let rejected = DeadFilter::all().reason(Reason::Rejected);
    for (filter, taken) in [(raw, 0), (rejected, 1)] {
        assert_eq!(q.redrive_matching(filter).await, Ok(taken));
    }
}

/// Reads `q`'s record of finished jobs in pages of `per_page`, each after the last entry
/// of the one before, and asserts that the pages hold the whole record (as one read of
/// up to 100 returns it), in its order, `total` entries.
pub async fn assert_history_pages<T, R, S>(q: &LeaseQueue<T, R, S>, per_page: usize, total: usize)
where
    R: Runtime,
    S: Store<T, Runtime = R>,
{
    let mut ids = Vec::new();
    let mut page = HistoryQuery::first(per_page);
    loop {
        let got = q.history(page.clone()).await.expect("a page of the record");
        assert!(got.len() <= per_page);
        let Some(last) = got.last() else { break };
        page = page.next(last.seq);
        ids.extend(got.iter().map(|f| f.id));
    }
    let whole = q
        .history(HistoryQuery::first(100))
        .await
        .expect("the record");
    let whole: Vec<MessageId> = whole.iter().map(|f| f.id).collect();
    assert_eq!(ids.len(), total);
    assert_eq!(ids, whole);
}

/// Asserts that `e` refused a push of 101 bytes to a store whose `max_item_size` is 100,
/// typed, and that it says so naming the option, the item handed back.
pub fn assert_too_large_101_of_100<T: std::fmt::Debug>(e: &leaseq_async::PushError<T>) {
    assert!(
        matches!(
            e,
            leaseq_async::PushError::TooLarge {
                size: 101,
                max: 100,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "the item encodes to 101 bytes, over the store's Options::max_item_size of 100: raise \
         it or push a smaller item; item handed back"
    );
}

/// What a test of the record compares of an entry: `(id, kind, outcome, attempts, reason)`.
pub type Outcome<'a> = (
    MessageId,
    Option<&'a str>,
    FinishOutcome,
    u32,
    Option<Reason>,
);

/// What a test of the record of finished jobs compares of each entry: `(id, kind,
/// outcome, attempts, reason)`.
pub fn outcomes(record: &[Finished]) -> Vec<Outcome<'_>> {
    record
        .iter()
        .map(|f| (f.id, f.kind.as_deref(), f.outcome, f.attempts, f.reason))
        .collect()
}

/// Asserts that `d` is item `id`'s delivery number `attempt`, resuming from the checkpoint
/// `checkpoint` (a job killed mid-way, redelivered).
pub fn assert_resumes<T, R, S>(
    d: &Delivery<T, R, S>,
    id: MessageId,
    attempt: u32,
    checkpoint: &[u8],
) where
    R: Runtime,
    S: Store<T, Runtime = R>,
{
    assert_eq!((d.id(), d.attempt()), (id, attempt));
    assert_eq!(
        d.progress().map(|p| p.as_bytes().to_vec()),
        Some(checkpoint.to_vec()),
        "resumes from its checkpoint"
    );
}
