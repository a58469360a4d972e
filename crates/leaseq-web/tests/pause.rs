//! Pause and resume from the dashboard, through the router: the queue page shows its status
//! and the button that flips it; the POST (with the CSRF token only) pauses the queue as
//! the store sees it (read back through the inspector / the file's view), the overview and
//! the queue page show it paused, and resume undoes it. Read-only mode shows no button and
//! refuses the POSTs; a SQLite file owned by a running queue is refused (409). The Postgres
//! tests skip loudly without a server; they fail then with `LEASEQ_PG_REQUIRED=1`.

mod common;

use std::time::Duration;

use axum::http::StatusCode;
use common::*;
use leaseq_postgres::PgInspector;
use leaseq_sqlite::FileView;
use leaseq_web::{Dashboard, SqliteOperator};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_pause_and_resume_with_the_csrf_token_only() {
    let Some((url, schema)) = pg_fixture_schema("pause").await else {
        return;
    };
    let mut inspector = PgInspector::connect(&url, &schema).await.unwrap();
    let app = leaseq_web::router(pg_acting(&url, &schema).await);

    let (_, _, page) = get(&app, "/queues/web_jobs", &[]).await;
    assert!(
        page.contains("id=\"status\" data-paused=\"false\">Running"),
        "{page}"
    );
    assert!(page.contains("action=\"/queues/web_jobs/pause\""), "{page}");
    let token = csrf_of(&page).unwrap();

    // Without the token: refused, nothing done.
    let (status, body) = post(&app, "/queues/web_jobs/pause", &[]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(!inspector.counts("web_jobs").await.unwrap().paused);

    let (status, body) = post(&app, "/queues/web_jobs/pause", &[("csrf", &token)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("data-changed=\"true\""), "{body}");
    assert!(inspector.counts("web_jobs").await.unwrap().paused);
    assert!(!inspector.counts("web_mail").await.unwrap().paused);
    // Twice: done, nothing changed.
    let (status, body) = post(&app, "/queues/web_jobs/pause", &[("csrf", &token)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("data-changed=\"false\""), "{body}");

    // Shown where the counts are.
    let (_, _, overview) = get(&app, "/", &[]).await;
    let row = |q: &str| {
        let at = overview.find(&format!("<tr data-queue=\"{q}\">")).unwrap();
        overview[at..at + overview[at..].find("</tr>").unwrap()].to_string()
    };
    assert!(
        row("web_jobs").contains("data-paused=\"true\""),
        "{overview}"
    );
    assert!(
        row("web_mail").contains("data-paused=\"false\""),
        "{overview}"
    );
    assert!(overview.contains("<td id=\"paused-count\">1 paused</td>"));
    let (_, _, page) = get(&app, "/queues/web_jobs", &[]).await;
    assert!(
        page.contains("id=\"status\" data-paused=\"true\">Paused"),
        "{page}"
    );
    assert!(
        page.contains("action=\"/queues/web_jobs/resume\""),
        "{page}"
    );

    let (status, body) = post(&app, "/queues/web_jobs/resume", &[("csrf", &token)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("is running again"), "{body}");
    assert!(!inspector.counts("web_jobs").await.unwrap().paused);

    // An unknown queue: 404, nothing opened.
    let (status, _) = post(&app, "/queues/nope/pause", &[("csrf", &token)]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Read-only: no button, every POST refused.
    let read_only = Dashboard::new(pg_acting(&url, &schema).await)
        .read_only()
        .router();
    let (_, _, page) = get(&read_only, "/queues/web_jobs", &[]).await;
    assert!(page.contains("data-paused=\"false\">Running"), "{page}");
    assert!(!page.contains("<form"), "{page}");
    for uri in ["/queues/web_jobs/pause", "/queues/web_jobs/resume"] {
        let (status, _) = post(&read_only, uri, &[("csrf", &token)]).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{uri}");
    }
    assert!(!inspector.counts("web_jobs").await.unwrap().paused);
    pg_drop(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_pause_through_the_file_refused_while_it_is_owned() {
    let path = sqlite_fixture("pause").await;
    let check = FileView::open(&path).unwrap();
    let app = leaseq_web::router(SqliteOperator::with_actions(FileView::open(&path).unwrap()));
    let (_, _, page) = get(&app, "/queues/billing", &[]).await;
    assert!(page.contains("action=\"/queues/billing/pause\""), "{page}");
    let token = csrf_of(&page).unwrap();

    let (status, body) = post(&app, "/queues/billing/pause", &[("csrf", &token)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(check.counts().unwrap().paused);
    let (_, _, overview) = get(&app, "/", &[]).await;
    assert!(overview.contains("data-paused=\"true\""), "{overview}");

    // While a queue owns the file: refused (409), still paused.
    let owner = leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(leaseq_async::Config::new(
        Duration::from_secs(30),
    ))
    .name("billing")
    .codec(leaseq_sqlite::BytesCodec)
    .open(leaseq_sqlite::Sqlite::file(&path))
    .await
    .unwrap();
    assert!(
        owner.stats().paused,
        "the owner reads the flag from the file"
    );
    let (status, body) = post(&app, "/queues/billing/resume", &[("csrf", &token)]).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(body.contains("in use by another process"), "{body}");
    owner.close().await.unwrap();
    drop(owner);

    let (status, body) = post(&app, "/queues/billing/resume", &[("csrf", &token)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(!check.counts().unwrap().paused);
    remove(&path);
}
