//! The dashboard in a real browser: headless Chromium driven through chromedriver
//! (WebDriver, from the OS packages), on a SQLite file and, when a server answers, a
//! Postgres schema. It reads the counts as a person sees them (the text of the cells),
//! checks that a `<script>` payload shows as its text and that no page holds a script
//! element, redrives a dead letter from its page and deletes dead letters through the
//! confirmation (Postgres; each checked through the inspector), and takes a screenshot of
//! each page into docs/screenshots/.
//!
//! Skips with a note when chromium or chromedriver is missing, except with
//! `LEASEQ_BROWSER_REQUIRED=1` (CI: .ci/run installs them), where that fails.

mod common;

use common::browser::*;
use common::*;
use fantoccini::Locator;
use leaseq_async::Page;
use leaseq_sqlite::FileView;
use leaseq_web::{PgOperator, SqliteOperator};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_sees_the_stores_counts_and_payloads_as_text() {
    let Some((chromium, driver)) = browser() else {
        return;
    };
    let path = sqlite_fixture("browser").await;
    let view = FileView::open(&path).unwrap();
    let counts = view.counts().unwrap();
    let live = view.items(Page::ALL).unwrap();
    let dead = view.dead_letters(Page::ALL).unwrap();
    let addr = serve(SqliteOperator::new(view)).await;
    let (_driver, c) = session(&chromium, &driver).await;
    let base = format!("http://{addr}");

    c.goto(&format!("{base}/")).await.unwrap();
    assert_eq!(
        row(&c, "billing").await,
        [counts.ready, counts.delayed, counts.in_flight, counts.dead]
    );
    no_script(&c).await;
    screenshot(&c, "overview").await;

    // The queue's link, followed as a person would.
    click(&c, Locator::LinkText("billing")).await;
    assert_eq!(text(&c, "#queue-name").await, "billing");
    assert_eq!(card(&c, "ready").await, counts.ready.to_string());
    assert_eq!(card(&c, "dead").await, counts.dead.to_string());
    no_script(&c).await;
    screenshot(&c, "queue").await;

    click(&c, Locator::LinkText("Dead letters")).await;
    let rows = c
        .find_all(Locator::Css("table#dead tbody tr"))
        .await
        .unwrap();
    assert_eq!(rows.len(), dead.len());
    screenshot(&c, "dead").await;

    // The `<script>` payload: its text on the page, no script in the DOM.
    let script = live
        .iter()
        .find(|i| i.payload.as_deref() == Some(SCRIPT))
        .unwrap();
    c.goto(&format!("{base}/queues/billing/items/{}", script.id.get()))
        .await
        .unwrap();
    assert_eq!(
        text(&c, "#payload-text").await,
        "<script>alert('x')</script>"
    );
    no_script(&c).await;
    screenshot(&c, "item-text").await;

    // A dead router job: its kind and args as formatted JSON.
    let email = first_email(&dead);
    c.goto(&format!("{base}/queues/billing/items/{}", email.id.get()))
        .await
        .unwrap();
    assert_eq!(text(&c, "#job-kind").await, "email");
    assert!(text(&c, "#args")
        .await
        .contains("\"to\": \"ops@example.com\""));
    screenshot(&c, "item-job").await;

    // Postgres: several queues on one overview.
    if let Some((url, schema)) = pg_fixture_schema("browser").await {
        let mut inspector = leaseq_postgres::PgInspector::connect(&url, &schema)
            .await
            .unwrap();
        let queues = inspector.queues().await.unwrap();
        let dead = inspector.dead_letters("web_jobs", Page::ALL).await.unwrap();
        let addr = serve(PgOperator::with_actions(
            inspector,
            url.as_str(),
            schema.as_str(),
        ))
        .await;
        c.goto(&format!("http://{addr}/")).await.unwrap();
        for q in queues.iter().filter(|q| q.queue.starts_with("web_")) {
            assert_eq!(
                row(&c, &q.queue).await,
                [q.ready, q.delayed, q.in_flight, q.dead]
            );
        }
        // The odd queue name shows as its text.
        let odd = c.find(Locator::LinkText(ODD_QUEUE)).await.unwrap();
        odd.click().await.unwrap();
        assert_eq!(text(&c, "#queue-name").await, ODD_QUEUE);
        c.goto(&format!("http://{addr}/")).await.unwrap();
        screenshot(&c, "overview-postgres").await;

        // A dead letter redriven from its page is back in the queue.
        let mut check = leaseq_postgres::PgInspector::connect(&url, &schema)
            .await
            .unwrap();
        let id = dead[0].id.get();
        c.goto(&format!("http://{addr}/queues/web_jobs/items/{id}"))
            .await
            .unwrap();
        screenshot(&c, "item-dead").await;
        click(&c, Locator::Css("form.action button")).await;
        assert!(text(&c, "#done").await.contains("is ready again"));
        let live = check.items("web_jobs", Page::ALL).await.unwrap();
        assert!(live.iter().any(|i| i.id.get() == id));

        // The bulk purge: its confirmation shows the count, and it deletes exactly that.
        let before = check.counts("web_jobs").await.unwrap().dead;
        assert_eq!(before, dead.len() as u64 - 1);
        c.goto(&format!("http://{addr}/queues/web_jobs/dead"))
            .await
            .unwrap();
        click(&c, Locator::Id("purge-dead")).await;
        assert_eq!(text(&c, "#purge-count").await, before.to_string());
        screenshot(&c, "purge-confirm").await;
        click(&c, Locator::Css("form.action button")).await;
        assert_eq!(text(&c, "#deleted").await, before.to_string());
        assert_eq!(check.counts("web_jobs").await.unwrap().dead, 0);
        no_script(&c).await;
        pg_drop(&url, &schema).await;
    }
    c.close().await.unwrap();
    remove(&path);
}
