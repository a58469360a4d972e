//! What the dashboard's tests share: the fixtures (a SQLite file, a Postgres schema), a GET
//! through the router, and reading counts back out of a page.
#![allow(dead_code, unreachable_pub)]

pub mod browser;
pub mod graph;

use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use leaseq_async::{Config, Failure, Push};
use tower::ServiceExt;

/// The payload that must show as text, never run.
pub const SCRIPT: &[u8] = b"<script>alert('x')</script>";

/// An envelope's bytes: the kind's length, the kind, the arguments.
pub fn envelope(kind: &str, args: &str) -> Vec<u8> {
    [&[kind.len() as u8][..], kind.as_bytes(), args.as_bytes()].concat()
}

/// A GET of `uri` with these headers: its status, headers and body.
pub async fn get(
    router: &Router,
    uri: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, HeaderMap, String) {
    let mut req = Request::builder().uri(uri);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let response = router
        .clone()
        .oneshot(req.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8(body.to_vec()).unwrap())
}

/// A POST of `form` (urlencoded pairs) to `uri`: its status and body.
pub async fn post(router: &Router, uri: &str, form: &[(&str, &str)]) -> (StatusCode, String) {
    let body: Vec<String> = form
        .iter()
        .map(|(k, v)| {
            format!(
                "{k}={}",
                v.replace('%', "%25")
                    .replace('&', "%26")
                    .replace('=', "%3D")
            )
        })
        .collect();
    let req = Request::builder()
        .method("POST")
        .uri(uri)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(body.join("&")))
        .unwrap();
    let response = router.clone().oneshot(req).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

/// The CSRF token of the first form in `html`, if it has one.
pub fn csrf_of(html: &str) -> Option<String> {
    let key = "name=\"csrf\" value=\"";
    let at = html.find(key)? + key.len();
    Some(html[at..at + html[at..].find('"')?].to_string())
}

/// The text of the first element whose opening tag ends with `attr`
/// (`data-count="ready"`, say).
pub fn text_after<'h>(html: &'h str, attr: &str) -> &'h str {
    let key = format!("{attr}>");
    let at = html
        .find(&key)
        .unwrap_or_else(|| panic!("no {key} in {html}"))
        + key.len();
    let rest = &html[at..];
    &rest[..rest.find('<').unwrap()]
}

/// The number in the element after `data-count="name">`.
fn count_after(html: &str, name: &str) -> u64 {
    text_after(html, &format!("data-count=\"{name}\""))
        .parse()
        .unwrap()
}

/// The minute of the epoch `f` finished in.
pub fn minute_of(f: &leaseq_async::Finished) -> u64 {
    let since = f
        .finished_at
        .duration_since(std::time::SystemTime::UNIX_EPOCH);
    since.unwrap().as_secs() / 60
}

/// The ready, delayed, in-flight and dead counts of `queue`'s row of the overview (the
/// queue's name as its `data-queue` attribute holds it, HTML-escaped).
pub fn overview_row(html: &str, queue_attr: &str) -> [u64; 4] {
    let key = format!("<tr data-queue=\"{queue_attr}\">");
    let at = html
        .find(&key)
        .unwrap_or_else(|| panic!("no row {key} in {html}"));
    let row = &html[at..];
    let row = &row[..row.find("</tr>").unwrap()];
    ["ready", "delayed", "in-flight", "dead"].map(|n| count_after(row, n))
}

/// The ready, delayed, in-flight and dead cards of a queue page.
pub fn queue_cards(html: &str) -> [u64; 4] {
    ["ready", "delayed", "in-flight", "dead"].map(|n| count_after(html, n))
}

pub fn temp(name: &str) -> PathBuf {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir().join(format!("leaseq-web-{name}-{}-{n}.db", std::process::id()))
}

pub fn remove(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-lock"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

fn config() -> Config {
    Config::new(Duration::from_secs(30)).with_max_attempts(1)
}

/// What every fixture queue holds: three dead letters (an email job nacked out of its
/// attempts, raw bytes nacked, an sms job rejected), three ready items (a `<script>` text,
/// a report job whose args hold markup, a plain text) and one delayed an hour.
macro_rules! fill {
    ($q:expr) => {{
        let q = &$q;
        for item in [
            envelope("email", "{\"to\":\"ops@example.com\",\"n\":17}"),
            vec![0xde, 0xad, 0xbe, 0xef],
            envelope("sms", "hi"),
        ] {
            q.push(item).await.unwrap();
        }
        for _ in 0..3 {
            let d = q.receive_timeout(Duration::from_secs(15)).await.unwrap();
            if d.item().starts_with(b"\x03sms") {
                d.dead_letter("no such number <b>").await.unwrap();
            } else {
                d.nack_with(Failure::error("upstream 503")).await.unwrap();
            }
        }
        q.push(SCRIPT.to_vec()).await.unwrap();
        q.push(envelope("report", "{\"month\":\"<b>2026-11</b>\"}"))
            .await
            .unwrap();
        q.push(b"invoice 981".to_vec()).await.unwrap();
        q.push_with(
            b"later".to_vec(),
            Push::new().delay(Duration::from_secs(3600)),
        )
        .await
        .unwrap();
    }};
}

/// A SQLite file, queue `billing`, filled as [`fill!`] says.
pub async fn sqlite_fixture(name: &str) -> PathBuf {
    let path = temp(name);
    let q = leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(config())
        .name("billing")
        .codec(leaseq_sqlite::BytesCodec)
        .open(leaseq_sqlite::Sqlite::file(&path))
        .await
        .unwrap();
    fill!(q);
    q.close().await.unwrap();
    path
}

const DEFAULT_URL: &str = "host=127.0.0.1 port=5432 user=postgres dbname=test";

/// The server's connection string (`LEASEQ_PG_URL`, or this machine's), or `None` after a
/// loud note when none answers and none is required (`LEASEQ_PG_REQUIRED=1`: a panic).
pub async fn pg_server() -> Option<String> {
    let url = std::env::var("LEASEQ_PG_URL").unwrap_or_else(|_| DEFAULT_URL.to_string());
    let reached = async {
        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
        tokio::spawn(conn);
        client.simple_query("SELECT 1").await.map(drop)
    }
    .await;
    match reached {
        Ok(()) => Some(url),
        Err(e) if std::env::var("LEASEQ_PG_REQUIRED").as_deref() == Ok("1") => {
            panic!("LEASEQ_PG_REQUIRED=1 but PostgreSQL at {url:?} cannot be reached: {e}")
        }
        Err(e) => {
            eprintln!(
                "\n!!! SKIPPED: PostgreSQL at {url:?} cannot be reached ({e}).\n\
                 !!! Point LEASEQ_PG_URL at a server to run the dashboard's Postgres tests.\n"
            );
            None
        }
    }
}

/// A schema no other run uses.
pub fn pg_schema(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("leaseq_web_{name}_{}_{nanos}", std::process::id())
}

/// Queue `name` of bytes on `url`'s server with `options` (its schema among them); 30 s
/// visibility.
pub async fn pg_queue(
    url: &str,
    name: &str,
    options: leaseq_postgres::Options,
) -> leaseq_postgres::PgQueue<Vec<u8>> {
    leaseq_tokio::LeaseQueue::builder(Config::new(Duration::from_secs(30)))
        .name(name.to_string())
        .codec(leaseq_postgres::BytesCodec)
        .open(leaseq_postgres::Postgres::url(url).options(options))
        .await
        .unwrap()
}

/// One job of each kind of `kinds` pushed, received and finished in turn: the `sms` ones
/// dead-lettered with `error`, the others acked.
pub async fn finish_jobs(q: &leaseq_postgres::PgQueue<Vec<u8>>, kinds: &[&str], error: &str) {
    for kind in kinds {
        q.push(envelope(kind, "{}")).await.unwrap();
        let d = q.receive_timeout(Duration::from_secs(15)).await.unwrap();
        if *kind == "sms" {
            d.dead_letter(error).await.unwrap();
        } else {
            d.ack().await.unwrap();
        }
    }
}

/// The first of `dead` whose payload is an `email` envelope.
pub fn first_email(dead: &[leaseq_async::StoredItem]) -> &leaseq_async::StoredItem {
    dead.iter()
        .find(|i| {
            i.payload
                .as_deref()
                .is_some_and(|p| p.starts_with(b"\x05email"))
        })
        .expect("an email among the dead letters")
}

/// The odd queue name of the Postgres fixture: markup and a slash in it.
pub const ODD_QUEUE: &str = "a b/<i>c</i>";

/// Queues `web_jobs` (filled as [`fill!`] says), `web_mail` (two ready items) and
/// [`ODD_QUEUE`] (one ready item) in a new schema of `url`'s server.
pub async fn pg_fixture(url: &str, schema: &str) {
    let open = |queue: &'static str| {
        leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(config())
            .name(queue.to_string())
            .codec(leaseq_postgres::BytesCodec)
            .open(
                leaseq_postgres::Postgres::url(url)
                    .options(leaseq_postgres::Options::new().schema(schema).pool_size(2)),
            )
    };
    let q = open("web_jobs").await.unwrap();
    fill!(q);
    q.close().await.unwrap();
    let q = open("web_mail").await.unwrap();
    q.push(envelope("email", "{\"to\":\"a@example.com\"}"))
        .await
        .unwrap();
    q.push(envelope("email", "{\"to\":\"b@example.com\"}"))
        .await
        .unwrap();
    q.close().await.unwrap();
    let q = open(ODD_QUEUE).await.unwrap();
    q.push(b"odd".to_vec()).await.unwrap();
    q.close().await.unwrap();
}

/// The bytes queue `mail` on tokio in the SQLite file at `path`, with `visibility`.
pub async fn sqlite_mail(
    path: &Path,
    visibility: Duration,
) -> leaseq_sqlite::SqliteQueue<Vec<u8>, leaseq_tokio::TokioRuntime, leaseq_sqlite::BytesCodec> {
    leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(Config::new(visibility))
        .name("mail")
        .codec(leaseq_sqlite::BytesCodec)
        .open(leaseq_sqlite::Sqlite::file(path))
        .await
        .unwrap()
}

/// The dashboard's router on the file at `path`, with `pool` shown as `name`.
pub fn file_dashboard<S>(path: &Path, name: &str, pool: &leaseq_tokio::Pool<Vec<u8>, S>) -> Router
where
    S: leaseq_async::Store<Vec<u8>, Runtime = leaseq_tokio::TokioRuntime>,
    leaseq_async::PoolWatch<Vec<u8>, leaseq_tokio::TokioRuntime, S>: Send + Sync + 'static,
{
    let view = leaseq_sqlite::FileView::open(path).unwrap();
    leaseq_web::Dashboard::new(leaseq_web::SqliteOperator::new(view))
        .with_pool(name, pool)
        .router()
}

/// A plain client on `url`'s server, its connection driven by a task.
pub async fn pg_client(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
}

/// Drops `schema` and all in it.
pub async fn pg_drop(url: &str, schema: &str) {
    pg_client(url)
        .await
        .simple_query(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
        .await
        .unwrap();
}

/// [`pg_fixture`] in a fresh schema named after `name` on the test server: its connection
/// string and the schema, or `None` (the test skips, as [`pg_server`] says) without one.
pub async fn pg_fixture_schema(name: &str) -> Option<(String, String)> {
    let url = pg_server().await?;
    let schema = pg_schema(name);
    pg_fixture(&url, &schema).await;
    Some((url, schema))
}

/// An operator over `schema` on `url`'s server with its actions on (redrive, purge, cancel,
/// pause).
pub async fn pg_acting(url: &str, schema: &str) -> leaseq_web::PgOperator {
    leaseq_web::PgOperator::with_actions(
        leaseq_postgres::PgInspector::connect(url, schema)
            .await
            .unwrap(),
        url,
        schema,
    )
}
