//! The dashboard over a PostgreSQL schema, page by page through the router (no socket):
//! every queue's counts as the inspector reads them, items, dead letters and an item page,
//! a queue name holding markup escaped in text and encoded in links, no connection string
//! in any page. Skips loudly without a server; fails then with `LEASEQ_PG_REQUIRED=1`.

mod common;

use axum::http::StatusCode;
use common::*;
use leaseq_async::Page;
use leaseq_postgres::PgInspector;
use leaseq_web::PgOperator;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_shows_the_schemas_queues_as_stored() {
    let Some((url, schema)) = pg_fixture_schema("pages").await else {
        return;
    };
    let mut inspector = PgInspector::connect(&url, &schema).await.unwrap();
    let queues = inspector.queues().await.unwrap();
    let names: Vec<&str> = queues.iter().map(|c| c.queue.as_str()).collect();
    assert_eq!(names, [ODD_QUEUE, "web_jobs", "web_mail"]);
    let live = inspector.items("web_jobs", Page::ALL).await.unwrap();
    let dead = inspector.dead_letters("web_jobs", Page::ALL).await.unwrap();
    let app = leaseq_web::router(PgOperator::new(
        PgInspector::connect(&url, &schema).await.unwrap(),
    ));

    // The overview: each queue's counts, as the store's.
    let (status, _, html) = get(&app, "/", &[]).await;
    assert_eq!(status, StatusCode::OK);
    for c in &queues {
        let attr = c.queue.replace('<', "&lt;").replace('>', "&gt;");
        assert_eq!(
            overview_row(&html, &attr),
            [c.ready, c.delayed, c.in_flight, c.dead],
            "{}: {html}",
            c.queue
        );
    }
    assert_eq!(overview_row(&html, "web_jobs"), [3, 1, 0, 3]);
    assert!(html.contains("<th>All 3</th>"), "{html}");
    // The odd name: text escaped, link percent-encoded.
    assert!(!html.contains("<i>c</i>"), "{html}");
    assert!(
        html.contains("href=\"/queues/a%20b%2F%3Ci%3Ec%3C%2Fi%3E\""),
        "{html}"
    );
    let (status, _, odd) = get(&app, "/queues/a%20b%2F%3Ci%3Ec%3C%2Fi%3E", &[]).await;
    assert_eq!(status, StatusCode::OK, "{odd}");
    assert_eq!(queue_cards(&odd), [1, 0, 0, 0], "{odd}");
    assert!(
        odd.contains("<span id=\"queue-name\">a b/&lt;i&gt;c&lt;/i&gt;</span>"),
        "{odd}"
    );

    // A queue's page, its live items and dead letters.
    let (_, _, html) = get(&app, "/queues/web_jobs", &[]).await;
    assert_eq!(queue_cards(&html), [3, 1, 0, 3], "{html}");
    for item in &live {
        assert!(
            html.contains(&format!("/queues/web_jobs/items/{}\"", item.id.get())),
            "{html}"
        );
    }
    assert!(!html.contains("<script"), "{html}");
    let (_, _, html) = get(&app, "/queues/web_jobs/dead", &[]).await;
    for item in &dead {
        assert!(
            html.contains(&format!("/queues/web_jobs/items/{}\"", item.id.get())),
            "{html}"
        );
    }
    assert!(html.contains(">no such number &lt;b&gt;<"), "{html}");

    // Item pages: the script payload as text, a dead job's args as formatted JSON.
    let script = live
        .iter()
        .find(|i| i.payload.as_deref() == Some(SCRIPT))
        .unwrap();
    let (status, _, page) = get(
        &app,
        &format!("/queues/web_jobs/items/{}", script.id.get()),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(!page.contains("<script"), "{page}");
    assert!(
        page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;</pre>"),
        "{page}"
    );
    let email = first_email(&dead);
    let (_, _, page) = get(
        &app,
        &format!("/queues/web_jobs/items/{}", email.id.get()),
        &[],
    )
    .await;
    assert!(page.contains("<dd id=\"job-kind\">email</dd>"), "{page}");
    assert!(
        page.contains("&quot;to&quot;: &quot;ops@example.com&quot;"),
        "{page}"
    );
    assert!(
        page.contains("<dt>Dead-letter reason</dt><dd>nacked</dd>"),
        "{page}"
    );
    // An id of another queue is not this queue's.
    let mail = inspector.items("web_mail", Page::ALL).await.unwrap();
    let (status, _, _) = get(
        &app,
        &format!("/queues/web_jobs/items/{}", mail[0].id.get()),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Schedules (none kept), an unknown queue, and no connection string anywhere.
    let (status, _, sched) = get(&app, "/queues/web_mail/schedules", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(sched.contains("No schedules kept"), "{sched}");
    let (status, _, missing) = get(&app, "/queues/web_nope", &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    for page in [&html, &odd, &page, &sched, &missing] {
        assert!(!page.contains(&url) && !page.contains("user=") && !page.contains("host="));
        assert!(
            !page.contains(&schema),
            "the schema's name is not shown either"
        );
    }
    pg_drop(&url, &schema).await;
}
