//! The dashboard's actions on a SQLite file (`SqliteOperator::with_actions`), through the
//! router: a dead letter redriven is back in the file, a filtered purge deletes what its
//! confirmation counted; while another queue owns the file, each is refused (409) and
//! nothing changes.

mod common;

use axum::http::StatusCode;
use common::*;
use leaseq_async::{Config, Page};
use leaseq_sqlite::FileView;
use leaseq_web::SqliteOperator;

fn dead_ids(path: &std::path::Path) -> Vec<u64> {
    let view = FileView::open(path).unwrap();
    view.dead_letters(Page::ALL)
        .unwrap()
        .iter()
        .map(|i| i.id.get())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redrive_and_purge_through_the_files_owner() {
    let path = sqlite_fixture("act").await;
    let app = leaseq_web::router(SqliteOperator::with_actions(FileView::open(&path).unwrap()));
    let dead = dead_ids(&path);
    assert_eq!(dead.len(), 3);
    let item = format!("/queues/billing/items/{}", dead[0]);
    let (_, _, page) = get(&app, &item, &[]).await;
    let token = csrf_of(&page).expect("a redrive form");
    assert!(
        page.contains("<span class=\"store\">SQLite</span>"),
        "{page}"
    );

    let (status, body) = post(&app, &format!("{item}/redrive"), &[("csrf", &token)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let view = FileView::open(&path).unwrap();
    assert!(view
        .items(Page::ALL)
        .unwrap()
        .iter()
        .any(|i| i.id.get() == dead[0]));
    assert_eq!(view.counts().unwrap().dead, 2);

    let (_, _, confirm) = get(&app, "/queues/billing/purge-dead?reason=rejected", &[]).await;
    assert!(
        confirm.contains("<strong id=\"purge-count\">1</strong>"),
        "{confirm}"
    );
    let (status, body) = post(
        &app,
        "/queues/billing/purge-dead",
        &[("csrf", &token), ("expected", "1"), ("reason", "rejected")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(dead_ids(&path), vec![dead[1]], "the nacked raw bytes stay");

    // The bulk redrive: what the filter takes, after its confirmation.
    let (_, _, list) = get(&app, "/queues/billing/dead?reason=nacked", &[]).await;
    assert!(
        list.contains(
            "<a id=\"redrive-dead\" href=\"/queues/billing/redrive-dead?reason=nacked\">"
        ),
        "{list}"
    );
    let (_, _, confirm) = get(&app, "/queues/billing/redrive-dead?reason=nacked", &[]).await;
    assert!(
        confirm.contains(
            "This puts back <strong id=\"redrive-count\">1</strong> dead letters (reason nacked)"
        ),
        "{confirm}"
    );
    let (status, body) = post(
        &app,
        "/queues/billing/redrive-dead",
        &[("csrf", &token), ("expected", "1"), ("reason", "nacked")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body.contains("<span id=\"redriven\">1</span> of 1"),
        "{body}"
    );
    assert!(dead_ids(&path).is_empty());
    let counts = FileView::open(&path).unwrap().counts().unwrap();
    assert_eq!((counts.ready, counts.dead), (5, 0));
    remove(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_another_queue_owns_is_not_changed() {
    let path = sqlite_fixture("owned").await;
    let app = leaseq_web::router(SqliteOperator::with_actions(FileView::open(&path).unwrap()));
    let dead = dead_ids(&path);
    let item = format!("/queues/billing/items/{}", dead[0]);
    let (_, _, page) = get(&app, &item, &[]).await;
    let token = csrf_of(&page).unwrap();
    // The file's owner: a queue open in this process.
    let owner = leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(Config::new(
        std::time::Duration::from_secs(30),
    ))
    .name("billing")
    .codec(leaseq_sqlite::BytesCodec)
    .open(leaseq_sqlite::Sqlite::file(&path))
    .await
    .unwrap();
    let (status, body) = post(&app, &format!("{item}/redrive"), &[("csrf", &token)]).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(body.contains("in use by another process"), "{body}");
    let (status, body) = post(
        &app,
        "/queues/billing/purge-dead",
        &[("csrf", &token), ("expected", "3")],
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(owner.stats().dead, 3, "nothing changed");
    owner.close().await.unwrap();
    assert_eq!(dead_ids(&path).len(), 3);
    remove(&path);
}
