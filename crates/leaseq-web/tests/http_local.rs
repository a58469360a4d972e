//! The dashboard mounted in a service's own app over that process's queues
//! (`LocalOperator`), through the router: the overview and queue page show the memory
//! store's counts, a dead letter redriven from its page is back in the queue (read back
//! through the queue API), and pause from the queue page stops receives until resume.

mod common;

use std::time::Duration;

use axum::http::StatusCode;
use common::*;
use leaseq_async::{Config, Page};
use leaseq_web::{Dashboard, LocalOperator};

type Queue = leaseq_tokio::LeaseQueue<Vec<u8>>;

/// A memory queue named `name`, one attempt per item.
fn queue(name: &'static str) -> Queue {
    Queue::builder(Config::new(Duration::from_secs(300)).with_max_attempts(1))
        .name(name)
        .build()
        .unwrap()
}

/// `mail` with 3 ready, 1 delayed, 1 in flight and 2 dead letters (one nacked, one
/// rejected), and the delivery holding the one in flight; `ticks` with one ready item (a `u64`, shown through a rendering).
async fn fixture() -> (Queue, leaseq_tokio::LeaseQueue<u64>, impl Sized) {
    let mail = queue("mail");
    for p in ["dead-1", "dead-2", "held"] {
        mail.push(p.as_bytes().to_vec()).await.unwrap();
    }
    let first = mail.try_receive().unwrap();
    first
        .nack_with(leaseq_async::Failure::error("503"))
        .await
        .unwrap();
    mail.try_receive()
        .unwrap()
        .dead_letter("bad input")
        .await
        .unwrap();
    let held = mail.try_receive().unwrap();
    for p in ["a", "b", "c"] {
        mail.push(p.as_bytes().to_vec()).await.unwrap();
    }
    mail.push_with(
        b"later".to_vec(),
        leaseq_async::Push::new().delay(Duration::from_secs(600)),
    )
    .await
    .unwrap();
    let ticks = leaseq_tokio::LeaseQueue::<u64>::builder(Config::new(Duration::from_secs(30)))
        .name("ticks")
        .build()
        .unwrap();
    ticks.push(7).await.unwrap();
    (mail, ticks, held)
}

fn app(mail: &Queue, ticks: &leaseq_tokio::LeaseQueue<u64>) -> axum::Router {
    let op = LocalOperator::new()
        .with(mail.clone())
        .with_rendered(ticks.clone(), |n: &u64| n.to_string().into_bytes());
    Dashboard::new(op).router()
}

#[tokio::test]
async fn the_overview_and_queue_page_show_the_queues_counts() {
    let (mail, ticks, _held) = fixture().await;
    let s = mail.stats();
    assert_eq!((s.ready, s.delayed, s.in_flight, s.dead), (3, 1, 1, 2));
    let app = app(&mail, &ticks);

    let (status, _, html) = get(&app, "/", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(overview_row(&html, "mail"), [3, 1, 1, 2], "{html}");
    assert_eq!(overview_row(&html, "ticks"), [1, 0, 0, 0], "{html}");
    assert!(html.contains("This process"), "{html}");

    let (status, _, html) = get(&app, "/queues/mail", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(queue_cards(&html), [3, 1, 1, 2], "{html}");

    let (status, _, _) = get(&app, "/queues/nope", &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_dead_letter_redriven_from_its_page_is_back_in_the_queue() {
    let (mail, ticks, _held) = fixture().await;
    let app = app(&mail, &ticks);
    let dead = mail.dead_letters(Page::ALL).await.unwrap();
    let id = dead[0].id;
    assert_eq!(dead[0].item.as_deref().unwrap(), b"dead-1");

    let item = format!("/queues/mail/items/{}", id.get());
    let (status, _, page) = get(&app, &item, &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("dead-1"), "the payload shows: {page}");
    let token = csrf_of(&page).expect("a redrive form");

    let (status, body) = post(&app, &format!("{item}/redrive"), &[("csrf", &token)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(mail.stats().dead, 1);
    let live = mail.peek(Page::ALL).await.unwrap();
    assert!(live.iter().any(|v| v.id == id), "{live:?}");
    // It is received again, as it was.
    let mut got = Vec::new();
    while let Some(d) = mail.try_receive() {
        got.push(d.item().clone());
    }
    assert!(got.contains(&b"dead-1".to_vec()), "{got:?}");
}

#[tokio::test]
async fn pause_from_the_queue_page_stops_receives_until_resume() {
    let (mail, ticks, _held) = fixture().await;
    let app = app(&mail, &ticks);
    let (_, _, page) = get(&app, "/queues/ticks", &[]).await;
    assert!(page.contains("action=\"/queues/ticks/pause\""), "{page}");
    let token = csrf_of(&page).unwrap();

    let (status, body) = post(&app, "/queues/ticks/pause", &[("csrf", &token)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("data-changed=\"true\""), "{body}");
    assert!(ticks.stats().paused);
    assert!(ticks.try_receive().is_none(), "paused: no lease");
    assert!(!mail.stats().paused, "only the queue asked for");
    ticks.push(8).await.unwrap();
    assert_eq!(ticks.stats().ready, 2, "pushes accepted while paused");

    let (status, body) = post(&app, "/queues/ticks/resume", &[("csrf", &token)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(!ticks.stats().paused);
    assert_eq!(*ticks.try_receive().unwrap().item(), 7);
}
