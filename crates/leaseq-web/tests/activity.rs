//! The last hour's charts over HTTP: on a SQLite file whose queue keeps a record of finished
//! jobs, the throughput chart's per-minute numbers (its columns' data attributes) are the
//! record's entries counted by minute and outcome, on the overview and the queue page, and
//! jobs finished after a first load are added once (by the background read a later load
//! starts); the failure rate is the dead-lettered
//! share of each minute; empty states (no record kept, a store that keeps none); a queue
//! name holding markup shows as text.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::Router;
use common::*;
use leaseq_async::{Config, HistoryQuery, Page, ScheduleState, StoredCounts, StoredItem};
use leaseq_sqlite::FileView;
use leaseq_web::{DeadQuery, Operator, OperatorError, SqliteOperator};

/// Counts of one minute: acked, dead-lettered, expired, cancelled.
type Row = [u64; 4];

/// The minutes of the chart `id` (`throughput` or `failure-rate`) that have a number, with
/// each of `attrs`' values.
fn columns(html: &str, id: &str, attrs: &[&str]) -> BTreeMap<u64, Vec<u64>> {
    let start = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no chart {id}: {html}"));
    let svg = &html[start..start + html[start..].find("</svg>").unwrap()];
    let attr = |g: &str, name: &str| -> Option<u64> {
        let key = format!(" {name}=\"");
        let at = g.find(&key)? + key.len();
        Some(g[at..at + g[at..].find('"')?].parse().unwrap())
    };
    let mut out = BTreeMap::new();
    for (at, _) in svg.match_indices("<g class=\"minute\"") {
        let g = &svg[at..at + svg[at..].find('>').unwrap()];
        let minute = attr(g, "data-minute").unwrap();
        let values: Vec<u64> = attrs.iter().filter_map(|a| attr(g, a)).collect();
        if values.len() == attrs.len() && values.iter().any(|v| *v > 0) {
            out.insert(minute, values);
        }
    }
    out
}

fn throughput(html: &str) -> BTreeMap<u64, Row> {
    columns(
        html,
        "throughput",
        &["data-acked", "data-dead", "data-expired", "data-cancelled"],
    )
    .into_iter()
    .map(|(m, v)| (m, [v[0], v[1], v[2], v[3]]))
    .collect()
}

/// The record of the file's queue, counted by minute of finish.
fn record(path: &Path) -> BTreeMap<u64, Row> {
    let view = FileView::open(path).unwrap();
    let mut out: BTreeMap<u64, Row> = BTreeMap::new();
    for f in view.history(&HistoryQuery::first(10_000)).unwrap() {
        let minute = minute_of(&f);
        let slot = match f.outcome.as_str() {
            "acked" => 0,
            "dead" => 1,
            "expired" => 2,
            _ => 3,
        };
        out.entry(minute).or_default()[slot] += 1;
    }
    out
}

/// Opens `name` in the file at `path` keeping a record, acks `acked` jobs and
/// dead-letters `dead`.
async fn finish(path: &Path, name: &'static str, acked: usize, dead: usize) {
    let q = leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(Config::new(Duration::from_secs(30)))
        .name(name)
        .codec(leaseq_sqlite::BytesCodec)
        .open(
            leaseq_sqlite::Sqlite::file(path)
                .options(leaseq_sqlite::Options::new().retention(Duration::from_secs(3600))),
        )
        .await
        .unwrap();
    for i in 0..acked + dead {
        q.push(envelope("email", "{}")).await.unwrap();
        let d = q.receive_timeout(Duration::from_secs(15)).await.unwrap();
        if i < dead {
            d.dead_letter("bounced").await.unwrap();
        } else {
            d.ack().await.unwrap();
        }
    }
    q.close().await.unwrap();
}

/// A file at a fresh path named after `file` in which queue `name` finished `acked` and
/// `dead` jobs (as [`finish`] does), and the dashboard's router on it.
async fn finished_file(
    file: &str,
    name: &'static str,
    acked: usize,
    dead: usize,
) -> (PathBuf, Router) {
    let path = temp(file);
    finish(&path, name, acked, dead).await;
    let app = leaseq_web::router(SqliteOperator::new(FileView::open(&path).unwrap()));
    (path, app)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_charts_hold_the_record_of_finished_jobs() {
    let (path, app) = finished_file("activity", "mail", 5, 2).await;
    let (status, _, overview) = get(&app, "/", &[]).await;
    assert_eq!(status, StatusCode::OK, "{overview}");
    let want = record(&path);
    assert_eq!(want.values().flatten().sum::<u64>(), 7);
    assert_eq!(throughput(&overview), want, "{overview}");
    assert!(overview.contains("data-total=\"acked\">5<"), "{overview}");
    assert!(overview.contains("data-total=\"dead\">2<"), "{overview}");
    // Each minute's failure rate: its dead-lettered share, in parts per million.
    let rates = columns(&overview, "failure-rate", &["data-failure-ppm"]);
    for (minute, [acked, dead, expired, cancelled]) in &want {
        let total = acked + dead + expired + cancelled;
        let rate = rates.get(minute).map_or(0, |v| v[0]);
        assert_eq!(
            rate,
            (dead + expired) * 1_000_000 / total,
            "minute {minute}"
        );
    }
    let (_, _, page) = get(&app, "/queues/mail", &[]).await;
    assert_eq!(throughput(&page), want, "{page}");

    // Jobs finished after the first load are added to it, once: a load serves the numbers
    // last read and reads the record again in the background once they are a few seconds
    // old (polled here, up to a minute: a bound for a hang, not a measured time).
    finish(&path, "mail", 3, 0).await;
    let want = record(&path);
    assert_eq!(want.values().flatten().sum::<u64>(), 10);
    let until = Instant::now() + Duration::from_secs(60);
    for uri in ["/", "/queues/mail"] {
        loop {
            let (_, _, page) = get(&app, uri, &[]).await;
            let shown = throughput(&page);
            if shown == want {
                break;
            }
            // Never anything but the record as it was or as it is.
            assert_eq!(shown.values().flatten().sum::<u64>(), 7, "{page}");
            assert!(Instant::now() < until, "{page}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    remove(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_name_with_markup_shows_as_text_beside_its_charts() {
    let (path, app) = finished_file("activity-markup", "<b>mail</b>", 1, 1).await;
    let (status, _, overview) = get(&app, "/", &[]).await;
    assert_eq!(status, StatusCode::OK, "{overview}");
    assert!(overview.contains("&lt;b&gt;mail&lt;/b&gt;"), "{overview}");
    assert!(!overview.contains("<b>mail"), "{overview}");
    assert_eq!(throughput(&overview), record(&path));
    let (status, _, page) = get(&app, "/queues/%3Cb%3Email%3C%2Fb%3E", &[]).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(throughput(&page), record(&path));
    remove(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_record_the_page_says_why_there_is_no_chart() {
    // A file whose queue kept no record.
    let path = sqlite_fixture("activity-none").await;
    let app = leaseq_web::router(SqliteOperator::new(FileView::open(&path).unwrap()));
    for uri in ["/", "/queues/billing"] {
        let (status, _, page) = get(&app, uri, &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            page.contains("id=\"no-activity\">No job finished"),
            "{page}"
        );
        assert!(!page.contains("id=\"throughput\""), "{page}");
    }
    remove(&path);

    // A store that keeps no record at all.
    let app = leaseq_web::router(Recordless);
    let (_, _, page) = get(&app, "/", &[]).await;
    assert!(
        page.contains("id=\"no-activity\">No throughput chart: this store keeps no record"),
        "{page}"
    );
    assert!(!page.contains("id=\"throughput\""), "{page}");
}

/// An operator of a store with one queue and no record of finished jobs.
struct Recordless;

impl Operator for Recordless {
    fn store_kind(&self) -> &'static str {
        "test"
    }
    async fn queues(&self) -> Result<Vec<StoredCounts>, OperatorError> {
        Ok(vec![StoredCounts::new("jobs", 1, 0, 0, 0)])
    }
    async fn counts(&self, _: &str) -> Result<StoredCounts, OperatorError> {
        Ok(StoredCounts::new("jobs", 1, 0, 0, 0))
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
}
