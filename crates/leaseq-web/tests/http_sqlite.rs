//! The dashboard over a SQLite queue file, page by page through the router (no socket):
//! the counts shown are the file's, items page and link to their pages, payloads show as
//! escaped text (a `<script>` payload never as markup), nothing shows the file's path,
//! credentials are required where asked and off loopback.

mod common;

use axum::http::StatusCode;
use common::*;
use leaseq_async::Page;
use leaseq_sqlite::FileView;
use leaseq_web::{Auth, Dashboard, ServeError, SqliteOperator};

fn dashboard(path: &std::path::Path) -> axum::Router {
    leaseq_web::router(SqliteOperator::new(FileView::open(path).unwrap()))
}

/// The id of the live item whose payload is `payload`.
fn id_of(path: &std::path::Path, payload: &[u8]) -> u64 {
    let view = FileView::open(path).unwrap();
    let mut all = view.items(Page::ALL).unwrap();
    all.extend(view.dead_letters(Page::ALL).unwrap());
    all.iter()
        .find(|i| i.payload.as_deref() == Some(payload))
        .unwrap()
        .id
        .get()
}

#[tokio::test]
async fn the_overview_and_queue_page_show_the_files_counts() {
    let path = sqlite_fixture("counts").await;
    let want = FileView::open(&path).unwrap().counts().unwrap();
    assert_eq!(
        (want.ready, want.delayed, want.in_flight, want.dead),
        (3, 1, 0, 3)
    );
    let app = dashboard(&path);
    let (status, headers, html) = get(&app, "/", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    assert!(headers["content-security-policy"]
        .to_str()
        .unwrap()
        .starts_with("default-src 'none'"));
    assert_eq!(overview_row(&html, "billing"), [3, 1, 0, 3], "{html}");
    assert!(html.contains("href=\"/queues/billing\""), "{html}");
    // No path of the file anywhere.
    let dir = path.parent().unwrap().display().to_string();
    assert!(!html.contains(&dir), "{html}");

    let (status, _, html) = get(&app, "/queues/billing", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(queue_cards(&html), [3, 1, 0, 3], "{html}");
    assert!(html.contains("<svg class=\"chart\""), "{html}");
    assert!(!html.contains(&dir), "{html}");
    remove(&path);
}

#[tokio::test]
async fn live_items_and_dead_letters_page_through() {
    let path = sqlite_fixture("paging").await;
    let app = dashboard(&path);
    let view = FileView::open(&path).unwrap();
    let live: Vec<u64> = view
        .items(Page::ALL)
        .unwrap()
        .iter()
        .map(|i| i.id.get())
        .collect();
    let dead: Vec<u64> = view
        .dead_letters(Page::ALL)
        .unwrap()
        .iter()
        .map(|i| i.id.get())
        .collect();
    assert_eq!((live.len(), dead.len()), (4, 3));

    // Two at a time: the first page links to the next, which starts after its last id.
    let (_, _, first) = get(&app, "/queues/billing?limit=2", &[]).await;
    for id in &live[..2] {
        assert!(
            first.contains(&format!("href=\"/queues/billing/items/{id}\"")),
            "{first}"
        );
    }
    assert!(!first.contains(&format!("/items/{}\"", live[2])), "{first}");
    let next = format!("/queues/billing?after={}&amp;limit=2", live[1]);
    assert!(first.contains(&next), "{first}");
    let (_, _, second) = get(&app, &next.replace("&amp;", "&"), &[]).await;
    for id in &live[2..] {
        assert!(second.contains(&format!("/items/{id}\"")), "{second}");
    }
    assert!(second.contains(">delayed<"), "{second}");

    let (status, _, html) = get(&app, "/queues/billing/dead", &[]).await;
    assert_eq!(status, StatusCode::OK);
    for id in &dead {
        assert!(html.contains(&format!("/items/{id}\"")), "{html}");
    }
    assert!(
        html.contains(">upstream 503<") && html.contains(">no such number &lt;b&gt;<"),
        "{html}"
    );
    assert!(
        html.contains(">nacked<") && html.contains(">rejected<"),
        "{html}"
    );
    // A job's kind in its column, its args as compact JSON.
    assert!(html.contains("<td>email</td><td class=\"payload\">{&quot;n&quot;:17,&quot;to&quot;:&quot;ops@example.com&quot;}</td>") ||
        html.contains("<td>email</td><td class=\"payload\">{&quot;to&quot;:&quot;ops@example.com&quot;,&quot;n&quot;:17}</td>"), "{html}");
    remove(&path);
}

#[tokio::test]
async fn payloads_show_escaped_as_text_json_or_hex() {
    let path = sqlite_fixture("payloads").await;
    let app = dashboard(&path);

    // A `<script>` payload: text, never markup, on its list and its page.
    let (_, _, list) = get(&app, "/queues/billing", &[]).await;
    assert!(!list.contains("<script"), "{list}");
    assert!(
        list.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"),
        "{list}"
    );
    let id = id_of(&path, SCRIPT);
    let (status, _, page) = get(&app, &format!("/queues/billing/items/{id}"), &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!page.contains("<script"), "{page}");
    assert!(page.contains("<pre class=\"text\" id=\"payload-text\">&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;</pre>"), "{page}");
    assert!(page.contains("00000000  3c 73 63 72 69 70 74 3e"), "{page}");

    // A router job: its kind, its args as formatted JSON (markup in them escaped).
    let id = id_of(&path, &envelope("report", "{\"month\":\"<b>2026-11</b>\"}"));
    let (_, _, page) = get(&app, &format!("/queues/billing/items/{id}"), &[]).await;
    assert!(page.contains("<dd id=\"job-kind\">report</dd>"), "{page}");
    assert!(
        page.contains("{\n  &quot;month&quot;: &quot;&lt;b&gt;2026-11&lt;/b&gt;&quot;\n}"),
        "{page}"
    );

    // A dead letter of raw bytes: hex, its attempts, reason and last error.
    let id = id_of(&path, &[0xde, 0xad, 0xbe, 0xef]);
    let (_, _, page) = get(&app, &format!("/queues/billing/items/{id}"), &[]).await;
    assert!(page.contains("00000000  de ad be ef"), "{page}");
    assert!(page.contains("<dt>Attempts</dt><dd>1</dd>"), "{page}");
    assert!(
        page.contains("<dt>Dead-letter reason</dt><dd>nacked</dd>"),
        "{page}"
    );
    assert!(
        page.contains("<pre class=\"text\" id=\"last-error\">upstream 503</pre>"),
        "{page}"
    );
    remove(&path);
}

#[tokio::test]
async fn bad_requests_get_their_status_and_no_panic() {
    let path = sqlite_fixture("bad").await;
    let app = dashboard(&path);
    for (uri, status, says) in [
        (
            "/queues/nope",
            StatusCode::NOT_FOUND,
            "no queue named &quot;nope&quot;",
        ),
        ("/queues/nope/dead", StatusCode::NOT_FOUND, "no queue named"),
        (
            "/queues/nope/items/1",
            StatusCode::NOT_FOUND,
            "no queue named",
        ),
        (
            "/queues/billing/items/999999",
            StatusCode::NOT_FOUND,
            "no item 999999",
        ),
        (
            "/queues/billing/items/x%3Cb%3E",
            StatusCode::BAD_REQUEST,
            "&quot;x&lt;b&gt;&quot; is not an item id",
        ),
        (
            "/queues/billing?limit=many",
            StatusCode::BAD_REQUEST,
            "limit &quot;many&quot; is not a number",
        ),
        (
            "/queues/billing?after=-1",
            StatusCode::BAD_REQUEST,
            "is not an id",
        ),
        ("/nowhere", StatusCode::NOT_FOUND, "no such page"),
    ] {
        let (got, _, html) = get(&app, uri, &[]).await;
        assert_eq!(got, status, "{uri}: {html}");
        assert!(html.contains(says), "{uri}: {html}");
    }
    // A file is read-only to the dashboard: no action shown, every POST refused.
    let (_, _, dead) = get(&app, "/queues/billing/dead", &[]).await;
    assert!(
        !dead.contains("method=\"post\"") && !dead.contains("purge-dead"),
        "{dead}"
    );
    assert!(dead.contains("SQLite &middot; read-only"), "{dead}");
    for uri in [
        "/queues/billing/purge-dead",
        "/queues/billing/redrive-dead",
        "/queues/billing/items/0/redrive",
    ] {
        let (got, body) = post(&app, uri, &[("csrf", "x"), ("expected", "3")]).await;
        assert_eq!(got, StatusCode::FORBIDDEN, "{uri}: {body}");
    }
    assert_eq!(FileView::open(&path).unwrap().counts().unwrap().dead, 3);
    // A limit past the most is cut to it, not refused.
    let (got, _, _) = get(&app, "/queues/billing?limit=99999999999", &[]).await;
    assert_eq!(got, StatusCode::OK);
    let (got, _, html) = get(&app, "/queues/billing/schedules", &[]).await;
    assert_eq!(got, StatusCode::OK);
    assert!(html.contains("No schedules kept in this queue."), "{html}");
    let (got, headers, css) = get(&app, "/style.css", &[]).await;
    assert_eq!(got, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/css; charset=utf-8");
    assert!(css.contains("--dead"));
    remove(&path);
}

#[tokio::test]
async fn credentials_are_required_when_set_and_off_loopback() {
    let path = sqlite_fixture("auth").await;
    let op = || SqliteOperator::new(FileView::open(&path).unwrap());
    let app = Dashboard::new(op())
        .auth(Auth::Bearer("t0ken".into()))
        .router();
    for page in ["/", "/queues/billing", "/style.css", "/nowhere"] {
        let (status, headers, body) = get(&app, page, &[]).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{page}");
        assert_eq!(headers["www-authenticate"], "Bearer realm=\"leaseq\"");
        assert!(!body.contains("billing"));
        let (status, _, _) = get(&app, page, &[("authorization", "Bearer wrong")]).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{page}");
    }
    let (status, _, html) = get(&app, "/", &[("authorization", "Bearer t0ken")]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(overview_row(&html, "billing"), [3, 1, 0, 3]);

    let basic = Auth::Basic {
        user: "ops".into(),
        password: "pw".into(),
    };
    let app = Dashboard::new(op()).auth(basic).router();
    let (status, headers, _) = get(&app, "/", &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(headers["www-authenticate"]
        .to_str()
        .unwrap()
        .starts_with("Basic "));
    let (status, _, _) = get(&app, "/", &[("authorization", "Basic b3BzOnB3")]).await;
    assert_eq!(status, StatusCode::OK);

    // Off loopback without credentials: refused before serving anything.
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    match Dashboard::new(op()).serve(listener).await {
        Err(ServeError::AuthRequired(addr)) => assert!(addr.ip().is_unspecified()),
        other => panic!("served off loopback without credentials: {other:?}"),
    }
    remove(&path);
}

#[tokio::test]
async fn nested_under_a_path_every_link_starts_with_it() {
    let path = sqlite_fixture("nested").await;
    let op = SqliteOperator::new(FileView::open(&path).unwrap());
    let app = axum::Router::new().nest("/admin", Dashboard::new(op).base_path("/admin/").router());
    let (status, _, html) = get(&app, "/admin", &[]).await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert!(html.contains("href=\"/admin/style.css\""), "{html}");
    assert!(html.contains("href=\"/admin/queues/billing\""), "{html}");
    let (status, _, html) = get(&app, "/admin/queues/billing/dead", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("href=\"/admin\">leaseq</a>"), "{html}");
    assert!(
        html.contains("href=\"/admin/queues/billing/items/"),
        "{html}"
    );
    remove(&path);
}

#[tokio::test]
async fn dead_letters_filter_by_reason_and_kind() {
    let path = sqlite_fixture("filter").await;
    let app = dashboard(&path);
    let sms = id_of(&path, &envelope("sms", "hi"));
    let email = id_of(
        &path,
        &envelope("email", "{\"to\":\"ops@example.com\",\"n\":17}"),
    );
    let raw = id_of(&path, &[0xde, 0xad, 0xbe, 0xef]);
    let row = |id: u64| format!("/items/{id}\"");
    for (query, shown, hidden) in [
        ("", vec![sms, email, raw], vec![]),
        ("?reason=rejected", vec![sms], vec![email, raw]),
        ("?reason=nacked", vec![email, raw], vec![sms]),
        ("?kind=email", vec![email], vec![sms, raw]),
        ("?reason=nacked&kind=sms", vec![], vec![sms, email, raw]),
        ("?reason=&kind=", vec![sms, email, raw], vec![]),
    ] {
        let (status, _, html) = get(&app, &format!("/queues/billing/dead{query}"), &[]).await;
        assert_eq!(status, StatusCode::OK, "{query}");
        for id in shown {
            assert!(html.contains(&row(id)), "{query}: {id} missing: {html}");
        }
        for id in hidden {
            assert!(!html.contains(&row(id)), "{query}: {id} shown: {html}");
        }
    }
    // The form shows the filter; a next page's link keeps it.
    let (_, _, html) = get(&app, "/queues/billing/dead?reason=nacked&limit=1", &[]).await;
    assert!(
        html.contains("<option value=\"nacked\" selected>nacked</option>"),
        "{html}"
    );
    let next = format!("/queues/billing/dead?after={email}&amp;limit=1&amp;reason=nacked");
    assert!(html.contains(&next), "{html}");
    let (_, _, html) = get(&app, &next.replace("&amp;", "&"), &[]).await;
    assert!(
        html.contains(&row(raw)) && !html.contains(&row(sms)),
        "{html}"
    );
    // A kind holding markup is escaped back into the form.
    let (_, _, html) = get(&app, "/queues/billing/dead?kind=%3Cb%3E", &[]).await;
    assert!(html.contains("name=\"kind\" value=\"&lt;b&gt;\""), "{html}");
    let (status, _, html) = get(&app, "/queues/billing/dead?reason=nope", &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(html.contains("no reason &quot;nope&quot;"), "{html}");
    remove(&path);
}

/// A raw HTTP/1.0 GET of `/` with this `Host` to `addr`: the status line.
async fn status_for_host(addr: std::net::SocketAddr, host: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET / HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out.lines().next().unwrap_or_default().to_string()
}

#[tokio::test]
async fn served_without_credentials_it_answers_loopback_host_names_only() {
    let path = sqlite_fixture("rebind").await;
    let op = SqliteOperator::new(FileView::open(&path).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(Dashboard::new(op).serve(listener));
    let port = addr.port();
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        assert_eq!(
            status_for_host(addr, &host).await,
            "HTTP/1.0 200 OK",
            "{host}"
        );
    }
    for host in [
        format!("evil.example:{port}"),
        "localhost.evil.example".into(),
    ] {
        assert_eq!(
            status_for_host(addr, &host).await,
            "HTTP/1.0 421 Misdirected Request",
            "{host}"
        );
    }
    server.abort();
    remove(&path);
}
