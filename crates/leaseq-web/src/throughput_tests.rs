//! The per-minute counts over a record held in memory: the search for the hour's first
//! entry, the pages read on from the cursor, the cap on one load's reads.

use std::time::{Duration, SystemTime};

use leaseq_async::{
    FinishOutcome, Finished, HistoryQuery, Page, ScheduleState, StoredCounts, StoredItem,
};
use leaseq_core::MessageId;

use super::{minute, Throughput, MAX_PAGES, PAGE, WINDOW};
use crate::operator::{Capabilities, Operator, OperatorError};
use crate::query::DeadQuery;

/// A record in memory (entry numbers with gaps, as another queue's entries leave them).
struct Record(std::sync::Mutex<Vec<Finished>>);

impl Record {
    /// `n` entries, the last finished at `last`, one every `every` before it; every third
    /// dead-lettered, every fifth cancelled.
    fn new(n: u64, last: SystemTime, every: Duration) -> Record {
        let entries = (0..n)
            .map(|i| entry(i, last - every * (n - 1 - i) as u32))
            .collect();
        Record(std::sync::Mutex::new(entries))
    }

    fn push(&self, at: SystemTime) {
        let mut e = self.0.lock().unwrap();
        let i = e.len() as u64;
        e.push(entry(i, at));
    }

    /// What the chart must hold: counts by outcome of the entries from `since` on.
    fn totals(&self, since: SystemTime) -> [u64; 4] {
        let mut t = [0; 4];
        for e in self
            .0
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.finished_at >= since)
        {
            t[usize::from(e.outcome.code())] += 1;
        }
        t
    }
}

fn entry(i: u64, at: SystemTime) -> Finished {
    let outcome = match i {
        i if i % 3 == 0 => FinishOutcome::DeadLettered,
        i if i % 5 == 0 => FinishOutcome::Cancelled,
        _ => FinishOutcome::Acked,
    };
    Finished::new(10 + i * 3, MessageId::new(i + 1), outcome, 1, at)
}

impl Operator for Record {
    fn store_kind(&self) -> &'static str {
        "test"
    }
    fn capabilities(&self) -> Capabilities {
        let mut c = Capabilities::default();
        c.history = true;
        c
    }
    async fn queues(&self) -> Result<Vec<StoredCounts>, OperatorError> {
        Ok(vec![StoredCounts::new("q", 0, 0, 0, 0)])
    }
    async fn counts(&self, _: &str) -> Result<StoredCounts, OperatorError> {
        Ok(StoredCounts::new("q", 0, 0, 0, 0))
    }
    async fn items(&self, _: &str, _: Page) -> Result<Vec<StoredItem>, OperatorError> {
        Ok(Vec::new())
    }
    async fn dead_letters(
        &self,
        _: &str,
        _: Page,
        _: &DeadQuery,
    ) -> Result<Vec<StoredItem>, OperatorError> {
        Ok(Vec::new())
    }
    async fn schedules(&self, _: &str) -> Result<Vec<ScheduleState>, OperatorError> {
        Ok(Vec::new())
    }
    async fn history(&self, _: &str, q: &HistoryQuery) -> Result<Vec<Finished>, OperatorError> {
        let e = self.0.lock().unwrap();
        Ok(e.iter()
            .filter(|f| q.after.is_none_or(|a| f.seq > a))
            .take(q.limit)
            .cloned()
            .collect())
    }
}

fn totals(m: &super::Minutes) -> [u64; 4] {
    FinishOutcome::ALL.map(|o| m.total(o))
}

fn since(now: SystemTime) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs((minute(now) - (WINDOW - 1)) * 60)
}

#[tokio::test]
async fn the_hour_of_a_longer_record_is_counted_once() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    // Three hours, one entry every 5 s: 720 an hour, over a page.
    let record = Record::new(3 * 720, now, Duration::from_secs(5));
    let t = Throughput::default();
    let m = t.minutes(&record, "q", now).await.unwrap();
    assert_eq!(m.counts.len(), WINDOW as usize);
    assert_eq!(m.first, minute(now) - (WINDOW - 1));
    assert!(!m.partial);
    assert_eq!(totals(&m), record.totals(since(now)));
    // 12 a minute, in each full minute.
    assert_eq!(m.counts[10].iter().sum::<u64>(), 12);

    // New entries are added to what was read, not read twice.
    let later = now + Duration::from_secs(30);
    for s in 1..=4 {
        record.push(now + Duration::from_secs(s));
    }
    let again = t.minutes(&record, "q", later).await.unwrap();
    assert_eq!(totals(&again), record.totals(since(later)));
    assert_eq!(
        again.counts.iter().flatten().sum::<u64>(),
        totals(&m).iter().sum::<u64>() + 4
    );
}

#[tokio::test]
async fn a_record_of_only_new_or_only_old_entries() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let fresh = Record::new(50, now, Duration::from_secs(1));
    let m = Throughput::default()
        .minutes(&fresh, "q", now)
        .await
        .unwrap();
    assert_eq!(totals(&m), fresh.totals(since(now)));
    assert_eq!(totals(&m).iter().sum::<u64>(), 50);

    let old = Record::new(50, now - Duration::from_secs(7200), Duration::from_secs(1));
    let m = Throughput::default().minutes(&old, "q", now).await.unwrap();
    assert_eq!(totals(&m), [0; 4]);
    let empty = Record::new(0, now, Duration::from_secs(1));
    let m = Throughput::default()
        .minutes(&empty, "q", now)
        .await
        .unwrap();
    assert_eq!((totals(&m), m.partial), ([0; 4], false));
}

#[tokio::test]
async fn a_load_reads_at_most_its_pages_and_the_next_one_reads_on() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let n = (MAX_PAGES * PAGE + PAGE / 2) as u64;
    let record = Record::new(n, now, Duration::from_millis(100));
    let t = Throughput::default();
    let first = t.minutes(&record, "q", now).await.unwrap();
    assert!(first.partial);
    assert_eq!(
        first.counts.iter().flatten().sum::<u64>(),
        (MAX_PAGES * PAGE) as u64
    );
    let second = t.minutes(&record, "q", now).await.unwrap();
    assert!(!second.partial);
    assert_eq!(totals(&second), record.totals(since(now)));
    assert_eq!(second.counts.iter().flatten().sum::<u64>(), n);
}

#[test]
fn numbers_read_a_minute_ago_move_to_the_window_of_now() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let mut m = super::Minutes::empty(now);
    m.counts[0] = [1, 0, 0, 0];
    m.counts[59] = [0, 2, 0, 0];
    let later = m.aligned(m.first + 1);
    assert_eq!(later.first, m.first + 1);
    assert_eq!(later.counts.len(), WINDOW as usize);
    // The oldest minute left the window; the last one is one step further back.
    assert_eq!(later.counts[58], [0, 2, 0, 0]);
    assert_eq!(later.counts.iter().flatten().sum::<u64>(), 2);
    assert_eq!(m.aligned(m.first), m);
}
