//! The dashboard's bulk cancel, through the router, on SQLite and Postgres: the queue page
//! links it, its confirmation counts the waiting items a filter (job kind, id range) takes,
//! the POST (with the CSRF token) cancels exactly those, ready and delayed, and leaves an
//! item in flight to its holder; a stale count or a POST without the token does nothing;
//! read-only mode offers none and refuses it. The Postgres cases skip loudly without a
//! server; fail then with `LEASEQ_PG_REQUIRED=1`.

mod common;

use std::time::Duration;

use axum::http::StatusCode;
use axum::Router;
use common::*;
use leaseq_async::{Config, Page};
use leaseq_postgres::PgInspector;
use leaseq_sqlite::FileView;
use leaseq_web::{Dashboard, PgOperator, SqliteOperator};

/// The count a confirmation page shows.
fn count_of(page: &str) -> Option<u64> {
    let at = page.find("<strong id=\"cancel-count\">")? + "<strong id=\"cancel-count\">".len();
    page[at..].split('<').next()?.parse().ok()
}

/// The count a done page says was cancelled.
fn cancelled_of(page: &str) -> Option<u64> {
    let at = page.find("<span id=\"cancelled\">")? + "<span id=\"cancelled\">".len();
    page[at..].split('<').next()?.parse().ok()
}

/// GETs the confirmation of `filter` on `queue`; POSTs it with the count and the token;
/// returns (count shown, count cancelled).
async fn confirm_and_cancel(app: &Router, queue: &str, filter: &[(&str, &str)]) -> (u64, u64) {
    let pairs: Vec<String> = filter.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let uri = format!("/queues/{queue}/cancel?{}", pairs.join("&"));
    let (status, _, page) = get(app, &uri, &[]).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let shown = count_of(&page).expect("a count");
    let token = csrf_of(&page).expect("a form with the token");
    let expected = shown.to_string();
    let mut form = vec![("csrf", token.as_str()), ("expected", expected.as_str())];
    form.extend_from_slice(filter);
    let (status, body) = post(app, &format!("/queues/{queue}/cancel"), &form).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    (shown, cancelled_of(&body).expect("a done count"))
}

fn live_payloads(path: &std::path::Path) -> Vec<Vec<u8>> {
    let view = FileView::open(path).unwrap();
    view.items(Page::ALL)
        .unwrap()
        .into_iter()
        .map(|i| i.payload.unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filtered_cancel_on_a_file_takes_exactly_what_it_counted() {
    let path = sqlite_fixture("cancel").await;
    let app = leaseq_web::router(SqliteOperator::with_actions(FileView::open(&path).unwrap()));
    let (_, _, page) = get(&app, "/queues/billing", &[]).await;
    assert!(
        page.contains("<a id=\"cancel\" href=\"/queues/billing/cancel\">"),
        "{page}"
    );

    // A stale count, or no token: refused, nothing done.
    let (_, _, confirm) = get(&app, "/queues/billing/cancel", &[]).await;
    assert_eq!(count_of(&confirm), Some(4), "three ready, one delayed");
    let token = csrf_of(&confirm).unwrap();
    let (status, body) = post(
        &app,
        "/queues/billing/cancel",
        &[("csrf", &token), ("expected", "9")],
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(count_of(&body), Some(4), "a new confirmation");
    let (status, _) = post(&app, "/queues/billing/cancel", &[("expected", "4")]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(live_payloads(&path).len(), 4, "nothing cancelled");

    // By job kind.
    assert_eq!(
        confirm_and_cancel(&app, "billing", &[("kind", "report")]).await,
        (1, 1)
    );
    let live = live_payloads(&path);
    assert_eq!(live.len(), 3);
    assert!(!live.iter().any(|p| p.starts_with(b"\x06report")));

    // By id range: the first two left (the script text, the invoice).
    let view = FileView::open(&path).unwrap();
    let ids: Vec<String> = view
        .items(Page::ALL)
        .unwrap()
        .iter()
        .map(|i| i.id.get().to_string())
        .collect();
    drop(view);
    let range = [("min_id", ids[0].as_str()), ("max_id", ids[1].as_str())];
    assert_eq!(confirm_and_cancel(&app, "billing", &range).await, (2, 2));
    assert_eq!(live_payloads(&path), vec![b"later".to_vec()]);

    // The rest: a delayed item is waiting too.
    assert_eq!(confirm_and_cancel(&app, "billing", &[]).await, (1, 1));
    let counts = FileView::open(&path).unwrap().counts().unwrap();
    assert_eq!((counts.live(), counts.dead), (0, 3), "dead letters stay");
    remove(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_on_postgres_leaves_an_item_in_flight_to_its_holder() {
    let Some((url, schema)) = pg_fixture_schema("cancel").await else {
        return;
    };
    let op = pg_acting(&url, &schema).await;
    let app = leaseq_web::router(op);
    // A worker holds one of web_mail's two emails.
    let worker =
        leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(Config::new(Duration::from_secs(300)))
            .name("web_mail".to_string())
            .codec(leaseq_postgres::BytesCodec)
            .open(
                leaseq_postgres::Postgres::url(&url)
                    .options(leaseq_postgres::Options::new().schema(&schema).pool_size(2)),
            )
            .await
            .unwrap();
    let held = worker
        .receive_timeout(Duration::from_secs(15))
        .await
        .unwrap();

    assert_eq!(
        confirm_and_cancel(&app, "web_mail", &[("kind", "email")]).await,
        (1, 1)
    );
    let mut inspector = PgInspector::connect(&url, &schema).await.unwrap();
    let counts = inspector.counts("web_mail").await.unwrap();
    assert_eq!((counts.ready, counts.in_flight), (0, 1));
    // Another queue untouched; the holder still settles its item.
    assert_eq!(inspector.counts("web_jobs").await.unwrap().ready, 3);
    held.ack().await.unwrap();
    assert_eq!(inspector.counts("web_mail").await.unwrap().live(), 0);
    worker.close().await.unwrap();

    // Read-only: no link, no confirmation, no POST.
    let ro = Dashboard::new(PgOperator::new(
        PgInspector::connect(&url, &schema).await.unwrap(),
    ))
    .read_only()
    .router();
    let (_, _, page) = get(&ro, "/queues/web_jobs", &[]).await;
    assert!(!page.contains("id=\"cancel\""), "{page}");
    let (status, _, _) = get(&ro, "/queues/web_jobs/cancel", &[]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = post(&ro, "/queues/web_jobs/cancel", &[("expected", "3")]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(inspector.counts("web_jobs").await.unwrap().ready, 3);
    pg_drop(&url, &schema).await;
}
