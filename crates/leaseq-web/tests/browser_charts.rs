//! The last hour's charts and the workers page in a real browser (headless Chromium through
//! chromedriver). On Postgres, a record of finished jobs spread over the last hour (entries
//! written into the schema's `history` table with times from one to 57 minutes ago, as an
//! hour of a running service leaves them): the overview's chart columns, read as the browser
//! holds them, are the record read back through the inspector, counted by minute and
//! outcome; a queue's page charts its own entries. A real pool of this process beside the
//! dashboard ([`Dashboard::with_pool`]): the workers page shows the items its workers hold,
//! reported stuck by its watchdog. Screenshots `overview-charts` and `workers`.
//!
//! Skips with a note without chromium/chromedriver (unless `LEASEQ_BROWSER_REQUIRED=1`) or
//! without a server (unless `LEASEQ_PG_REQUIRED=1`).

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use common::browser::*;
use common::*;
use fantoccini::{Client, Locator};
use leaseq_async::{Config, HistoryQuery, Job, Watchdog};
use leaseq_postgres::PgInspector;
use leaseq_sqlite::FileView;
use leaseq_web::{Dashboard, PgOperator, SqliteOperator};

/// Counts of one minute: acked, dead-lettered, expired, cancelled.
type Row = [u64; 4];

/// How long a wait may take before the test fails (not a measured time).
const PATIENCE: Duration = Duration::from_secs(60);

/// The columns of the chart `#throughput` with a job, as the browser holds them.
async fn columns(c: &Client) -> BTreeMap<u64, Row> {
    let mut out = BTreeMap::new();
    for g in c
        .find_all(Locator::Css("svg#throughput g.minute"))
        .await
        .unwrap()
    {
        let mut row = [0; 4];
        for (i, a) in ["data-acked", "data-dead", "data-expired", "data-cancelled"]
            .into_iter()
            .enumerate()
        {
            row[i] = g.attr(a).await.unwrap().unwrap().parse().unwrap();
        }
        if row.iter().any(|n| *n > 0) {
            let minute = g.attr("data-minute").await.unwrap().unwrap();
            out.insert(minute.parse().unwrap(), row);
        }
    }
    out
}

/// `queue`'s record as the inspector reads it, counted by minute of finish and outcome.
async fn record(inspector: &mut PgInspector, queues: &[&str]) -> BTreeMap<u64, Row> {
    let mut out: BTreeMap<u64, Row> = BTreeMap::new();
    for q in queues {
        let mut query = HistoryQuery::first(1000);
        loop {
            let page = inspector.history(q, &query).await.unwrap();
            let Some(last) = page.last().map(|f| f.seq) else {
                break;
            };
            for f in &page {
                let m = f
                    .finished_at
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap()
                    .as_secs()
                    / 60;
                let slot = ["acked", "dead", "expired", "cancelled"]
                    .iter()
                    .position(|o| *o == f.outcome.as_str())
                    .unwrap();
                out.entry(m).or_default()[slot] += 1;
            }
            query = query.next(last);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_overview_charts_the_record_of_the_last_hour() {
    let Some((chromium, driver)) = browser() else {
        return;
    };
    let Some(url) = pg_server().await else {
        return;
    };
    let schema = pg_schema("browser_charts");
    pg_fixture(&url, &schema).await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    // Per queue and minute ago (1 to 57), 20 to 42 entries; every 17th dead-lettered, every
    // 41st expired, every 53rd cancelled.
    client
        .simple_query(&format!(
            "INSERT INTO \"{schema}\".history (queue, id, kind, outcome, attempts, finished_at)
             SELECT q, m * 100 + n, 'email', CASE WHEN n % 17 = 0 THEN 1 WHEN n % 41 = 0 THEN 3
                                             WHEN n % 53 = 0 THEN 2 ELSE 0 END,
                    1, clock_timestamp() - m * interval '1 minute' - n * interval '100 ms'
             FROM (VALUES ('web_jobs', 7), ('web_mail', 3)) AS v(q, k),
                  generate_series(1, 57) AS m, generate_series(1, 20 + (m * k) % 23) AS n"
        ))
        .await
        .unwrap();
    let mut inspector = PgInspector::connect(&url, &schema).await.unwrap();
    let all = record(&mut inspector, &["web_jobs", "web_mail"]).await;
    let jobs = record(&mut inspector, &["web_jobs"]).await;
    assert_eq!(all.len(), 57);
    let addr = serve(PgOperator::new(inspector)).await;
    let (_driver, c) = session(&chromium, &driver).await;

    c.goto(&format!("http://{addr}/")).await.unwrap();
    text(&c, "svg#throughput").await;
    assert_eq!(columns(&c).await, all);
    let acked: u64 = all.values().map(|r| r[0]).sum();
    assert_eq!(text(&c, "b[data-total=\"acked\"]").await, acked.to_string());
    assert!(
        c.find_all(Locator::Css("svg#failure-rate g[data-failure-ppm]"))
            .await
            .unwrap()
            .len()
            == 57
    );
    no_script(&c).await;
    screenshot(&c, "overview-charts").await;

    c.goto(&format!("http://{addr}/queues/web_jobs"))
        .await
        .unwrap();
    text(&c, "svg#throughput").await;
    assert_eq!(columns(&c).await, jobs);
    c.close().await.unwrap();
    pg_drop(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workers_page_shows_a_pool_of_this_process() {
    let Some((chromium, driver)) = browser() else {
        return;
    };
    let path = temp("browser-workers");
    let q = leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(Config::new(Duration::from_secs(300)))
        .name("mail")
        .codec(leaseq_sqlite::BytesCodec)
        .open(leaseq_sqlite::Sqlite::file(&path))
        .await
        .unwrap();
    let (gate, gated) = tokio::sync::watch::channel(false);
    let pool = leaseq_tokio::Pool::builder(q.clone())
        .workers(3)
        .item_type(|item: &Vec<u8>| {
            if item.starts_with(b"report") {
                "report"
            } else {
                "email"
            }
        })
        .watchdog(Watchdog::new(
            Duration::from_millis(10),
            Duration::from_millis(200),
        ))
        .spawn(move |job: Job<Vec<u8>>| {
            let mut gated = gated.clone();
            async move {
                if job.item.ends_with(b"hold") {
                    let _ = gated.wait_for(|open| *open).await;
                }
                Ok(())
            }
        });
    for n in 0..40 {
        let kind = if n % 3 == 0 { "report" } else { "email" };
        q.push(format!("{kind} {n}").into_bytes()).await.unwrap();
    }
    let held = [
        q.push(b"report hold".to_vec()).await.unwrap(),
        q.push(b"email hold".to_vec()).await.unwrap(),
    ];
    let app = Dashboard::new(SqliteOperator::new(FileView::open(&path).unwrap()))
        .with_pool("mailer", &pool)
        .router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let (_driver, c) = session(&chromium, &driver).await;

    // Reloaded until the watchdog has reported both held items.
    let until = Instant::now() + PATIENCE;
    loop {
        c.goto(&format!("http://{addr}/workers")).await.unwrap();
        let stuck = c
            .find_all(Locator::Css("tr[data-stuck=\"true\"]"))
            .await
            .unwrap();
        if stuck.len() == 2 {
            break;
        }
        assert!(Instant::now() < until, "{} stuck", stuck.len());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut shown = Vec::new();
    for tr in c
        .find_all(Locator::Css("table.running tr[data-item]"))
        .await
        .unwrap()
    {
        shown.push(tr.attr("data-item").await.unwrap().unwrap());
    }
    shown.sort();
    let mut want: Vec<String> = held.iter().map(|id| id.get().to_string()).collect();
    want.sort();
    assert_eq!(shown, want);
    assert_eq!(
        text(&c, "[data-k=\"ok\"]").await,
        pool.stats().ok.to_string()
    );
    no_script(&c).await;
    screenshot(&c, "workers").await;

    gate.send_replace(true);
    pool.shutdown(Duration::from_secs(5)).await;
    q.close().await.unwrap();
    c.close().await.unwrap();
    remove(&path);
}
