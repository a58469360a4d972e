//! The dashboard's actions on Postgres, through the router: a dead letter redriven from
//! its page is back in the queue (read through the inspector); a purge deletes exactly the
//! count its confirmation showed, and nothing when the count changed; a POST without the
//! CSRF token, or with another, is refused; read-only mode (and an operator without
//! actions, and a SQLite file) shows no action and refuses every POST. Skips loudly
//! without a server; fails then with `LEASEQ_PG_REQUIRED=1`.

mod common;

use axum::http::StatusCode;
use common::*;
use leaseq_async::Page;
use leaseq_postgres::PgInspector;
use leaseq_web::{Dashboard, PgOperator};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redrive_and_purge_with_the_csrf_token_only() {
    let Some((url, schema)) = pg_fixture_schema("actions").await else {
        return;
    };
    let mut inspector = PgInspector::connect(&url, &schema).await.unwrap();
    let dead = inspector.dead_letters("web_jobs", Page::ALL).await.unwrap();
    assert_eq!(dead.len(), 3);
    let app = leaseq_web::router(pg_acting(&url, &schema).await);

    // The dead letter's page has the form, with the token.
    let id = dead[0].id.get();
    let item = format!("/queues/web_jobs/items/{id}");
    let (_, _, page) = get(&app, &item, &[]).await;
    let token = csrf_of(&page).expect("a form with a token");
    assert_eq!(token.len(), 64);
    let redrive = format!("{item}/redrive");
    assert!(page.contains(&format!("action=\"{redrive}\"")), "{page}");

    // Without the token, or with another: refused, nothing done.
    for form in [
        vec![],
        vec![("csrf", "0".repeat(64))],
        vec![("csrf", String::new())],
    ] {
        let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, body) = post(&app, &redrive, &form).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert!(body.contains("CSRF token is missing or stale"), "{body}");
    }
    assert_eq!(inspector.counts("web_jobs").await.unwrap().dead, 3);

    // With it: back in the queue.
    let (status, body) = post(&app, &redrive, &[("csrf", &token)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body.contains(&format!("Dead letter {id} is ready again")),
        "{body}"
    );
    let live = inspector.items("web_jobs", Page::ALL).await.unwrap();
    assert!(
        live.iter().any(|i| i.id.get() == id),
        "redriven item is live"
    );
    assert_eq!(inspector.counts("web_jobs").await.unwrap().dead, 2);
    // Twice: refused (409), it is no dead letter any more.
    let (status, body) = post(&app, &redrive, &[("csrf", &token)]).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");

    // The purge's confirmation shows the count; a stale count deletes nothing.
    let (_, _, dead_page) = get(&app, "/queues/web_jobs/dead", &[]).await;
    assert!(
        dead_page.contains("href=\"/queues/web_jobs/purge-dead\""),
        "{dead_page}"
    );
    let (status, _, confirm) = get(&app, "/queues/web_jobs/purge-dead", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        confirm.contains("<strong id=\"purge-count\">2</strong>"),
        "{confirm}"
    );
    assert!(
        confirm.contains("name=\"expected\" value=\"2\""),
        "{confirm}"
    );
    let (status, body) = post(
        &app,
        "/queues/web_jobs/purge-dead",
        &[("csrf", &token), ("expected", "3")],
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body.contains("now holds 2 dead letters, not the 3 confirmed"),
        "{body}"
    );
    assert_eq!(inspector.counts("web_jobs").await.unwrap().dead, 2);
    let (status, body) = post(&app, "/queues/web_jobs/purge-dead", &[("expected", "2")]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = post(
        &app,
        "/queues/web_jobs/purge-dead",
        &[("csrf", &token), ("expected", "2")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body.contains("<span id=\"deleted\">2</span> dead letters"),
        "{body}"
    );
    let after = inspector.counts("web_jobs").await.unwrap();
    assert_eq!((after.ready, after.delayed, after.dead), (4, 1, 0));
    // Another queue untouched.
    assert_eq!(inspector.counts("web_mail").await.unwrap().ready, 2);
    pg_drop(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_shows_no_action_and_refuses_every_post() {
    let Some((url, schema)) = pg_fixture_schema("readonly").await else {
        return;
    };
    let mut inspector = PgInspector::connect(&url, &schema).await.unwrap();
    let id = inspector.dead_letters("web_jobs", Page::ALL).await.unwrap()[0]
        .id
        .get();
    let item = format!("/queues/web_jobs/items/{id}");
    let read_only = Dashboard::new(pg_acting(&url, &schema).await)
        .read_only()
        .router();
    let without = leaseq_web::router(PgOperator::new(
        PgInspector::connect(&url, &schema).await.unwrap(),
    ));
    for app in [&read_only, &without] {
        let (_, _, page) = get(app, &item, &[]).await;
        assert!(
            !page.contains("<form") && csrf_of(&page).is_none(),
            "{page}"
        );
        assert!(page.contains("&middot; read-only"), "{page}");
        let (_, _, dead) = get(app, "/queues/web_jobs/dead", &[]).await;
        assert!(
            !dead.contains("purge-dead") && !dead.contains("redrive-dead"),
            "{dead}"
        );
        let (status, _, _) = get(app, "/queues/web_jobs/purge-dead", &[]).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, _, _) = get(app, "/queues/web_jobs/redrive-dead", &[]).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        for (uri, form) in [
            (format!("{item}/redrive"), vec![("csrf", "x")]),
            (
                "/queues/web_jobs/redrive-dead".into(),
                vec![("csrf", "x"), ("expected", "3")],
            ),
            (
                "/queues/web_jobs/purge-dead".into(),
                vec![("csrf", "x"), ("expected", "3")],
            ),
        ] {
            let (status, _) = post(app, &uri, &form).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{uri}");
        }
    }
    assert_eq!(
        inspector.counts("web_jobs").await.unwrap().dead,
        3,
        "nothing changed"
    );
    pg_drop(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filtered_purge_deletes_what_its_filter_takes() {
    let Some((url, schema)) = pg_fixture_schema("filtered").await else {
        return;
    };
    let mut inspector = PgInspector::connect(&url, &schema).await.unwrap();
    let app = leaseq_web::router(pg_acting(&url, &schema).await);
    let (_, _, dead) = get(&app, "/queues/web_jobs/dead?reason=nacked", &[]).await;
    assert!(
        dead.contains("href=\"/queues/web_jobs/purge-dead?reason=nacked\""),
        "{dead}"
    );
    let (status, _, confirm) = get(&app, "/queues/web_jobs/purge-dead?reason=nacked", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        confirm.contains("<strong id=\"purge-count\">2</strong> dead letters (reason nacked)"),
        "{confirm}"
    );
    assert!(
        confirm.contains("name=\"reason\" value=\"nacked\""),
        "{confirm}"
    );
    let token = csrf_of(&confirm).unwrap();
    let (status, body) = post(
        &app,
        "/queues/web_jobs/purge-dead",
        &[("csrf", &token), ("expected", "2"), ("reason", "nacked")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("<span id=\"deleted\">2</span>"), "{body}");
    // The rejected sms stays.
    let left = inspector.dead_letters("web_jobs", Page::ALL).await.unwrap();
    assert_eq!(left.len(), 1);
    assert!(left[0].payload.as_deref().unwrap().starts_with(b"\x03sms"));
    // By kind: the count of that kind only.
    let (_, _, confirm) = get(&app, "/queues/web_jobs/purge-dead?kind=email", &[]).await;
    assert!(
        confirm.contains("<strong id=\"purge-count\">0</strong>"),
        "{confirm}"
    );
    pg_drop(&url, &schema).await;
}
