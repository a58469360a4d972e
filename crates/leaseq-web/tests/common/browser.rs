//! The browser tests' helpers: chromedriver and a headless Chromium session, a dashboard
//! served on loopback, screenshots, and reading what a page shows.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use leaseq_web::Operator;

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// The browser's binaries, or `None` after a note when one is missing and none is
/// required.
pub fn browser() -> Option<(String, String)> {
    let chromium = std::env::var("LEASEQ_CHROMIUM").unwrap_or_else(|_| CHROMIUM.into());
    let driver = std::env::var("LEASEQ_CHROMEDRIVER").unwrap_or_else(|_| CHROMEDRIVER.into());
    let missing: Vec<&str> = [&chromium, &driver]
        .into_iter()
        .filter(|p| !Path::new(p.as_str()).exists())
        .map(String::as_str)
        .collect();
    if missing.is_empty() {
        return Some((chromium, driver));
    }
    if std::env::var("LEASEQ_BROWSER_REQUIRED").as_deref() == Ok("1") {
        panic!("LEASEQ_BROWSER_REQUIRED=1 but {missing:?} missing (apt-get install -y chromium chromium-driver)");
    }
    eprintln!(
        "\n!!! SKIPPED: the browser test needs {missing:?} (apt-get install -y chromium \
         chromium-driver; LEASEQ_CHROMIUM / LEASEQ_CHROMEDRIVER name other paths).\n"
    );
    None
}

/// chromedriver, stopped on drop.
pub struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts chromedriver on a free port and opens a headless session on it.
pub async fn session(chromium: &str, driver: &str) -> (Driver, Client) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromedriver");
    let driver = Driver(child);
    let caps = serde_json::json!({
        "goog:chromeOptions": {
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", "--window-size=1280,900", "--hide-scrollbars"],
        }
    });
    let caps = caps.as_object().unwrap().clone();
    let url = format!("http://127.0.0.1:{port}");
    // chromedriver takes a moment to listen: tried again for up to 30 s (a start-up
    // wait, not a measured time).
    let mut last = None;
    for _ in 0..300 {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        match ClientBuilder::new(connector)
            .capabilities(caps.clone())
            .connect(&url)
            .await
        {
            Ok(client) => return (driver, client),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no WebDriver session: {last:?}");
}

/// Serves `op`'s dashboard on a loopback port of this process.
pub async fn serve<O: Operator>(op: O) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, leaseq_web::router(op)).await });
    addr
}

/// Where the screenshots go: the README's `docs/screenshots/` when `LEASEQ_SCREENSHOTS=docs`
/// (to refresh them), else the test's scratch directory, so that a test run leaves the
/// tree as it was.
pub fn shots() -> PathBuf {
    let dir = if std::env::var("LEASEQ_SCREENSHOTS").as_deref() == Ok("docs") {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/screenshots")
    } else {
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("screenshots")
    };
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub async fn screenshot(c: &Client, name: &str) {
    let png = c.screenshot().await.unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    std::fs::write(shots().join(format!("{name}.png")), png).unwrap();
}

/// Chromium and chromedriver, the Postgres server, and a fresh schema name after `name`;
/// `None` (the test skipped, as [`browser`] and [`super::pg_server`] say) without either.
pub async fn browser_on_pg(name: &str) -> Option<(String, String, String, String)> {
    let (chromium, driver) = browser()?;
    let url = super::pg_server().await?;
    Some((chromium, driver, url, super::pg_schema(name)))
}

/// The text of the first element `css` finds, waited for (up to 30 s: a page a click
/// loads may not be there yet; a bound for a hang, not a measured time).
pub async fn text(c: &Client, css: &str) -> String {
    c.wait()
        .at_most(Duration::from_secs(30))
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no {css}: {e}"))
        .text()
        .await
        .unwrap()
}

/// How many elements `css` finds once it finds `want` (a page a click loads may not be
/// there yet: waited for up to 30 s, then the count found, for the caller's assertion).
pub async fn count_when(c: &Client, css: &str, want: usize) -> usize {
    let until = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let n = c.find_all(Locator::Css(css)).await.unwrap().len();
        if n == want || std::time::Instant::now() >= until {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Clicks the first element `locator` finds, as a person would.
pub async fn click(c: &Client, locator: Locator<'_>) {
    c.find(locator).await.unwrap().click().await.unwrap();
}

/// The text of the queue page's count card `name` (`ready`, `dead`, ...).
pub async fn card(c: &Client, name: &str) -> String {
    text(c, &format!(".card [data-count=\"{name}\"]")).await
}

/// The ready, delayed, in-flight and dead cells of `queue`'s overview row, as shown.
pub async fn row(c: &Client, queue: &str) -> [u64; 4] {
    let mut out = [0; 4];
    for (i, name) in ["ready", "delayed", "in-flight", "dead"].iter().enumerate() {
        let css = format!("tr[data-queue=\"{queue}\"] td[data-count=\"{name}\"]");
        out[i] = text(c, &css).await.trim().parse().unwrap();
    }
    out
}

/// No script element in the page's DOM.
pub async fn no_script(c: &Client) {
    let scripts = c.find_all(Locator::Css("script")).await.unwrap();
    assert!(
        scripts.is_empty(),
        "a script element in {:?}",
        c.current_url().await
    );
}
