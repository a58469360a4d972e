//! `leaseq web`: the dashboard served from the command line on a SQLite file: its pages
//! over a real socket, credentials from the environment, an address off loopback refused
//! without them (exit 2), a missing file refused (exit 1).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use leaseq_async::{Config, LeaseQueue};
use leaseq_smol::SmolRuntime;
use leaseq_sqlite::{BytesCodec, Sqlite};

fn temp(name: &str) -> PathBuf {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir().join(format!(
        "leaseq-cli-web-{name}-{}-{n}.db",
        std::process::id()
    ))
}

fn remove(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-lock"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// A file of queue `billing` with two ready items.
fn fixture(name: &str) -> PathBuf {
    let path = temp(name);
    let q = smol::block_on(
        LeaseQueue::builder(Config::new(Duration::from_secs(30)))
            .runtime(SmolRuntime::global())
            .name("billing")
            .codec(BytesCodec)
            .open(Sqlite::file(&path)),
    )
    .unwrap();
    smol::block_on(async {
        q.push(b"one".to_vec()).await.unwrap();
        q.push(b"<b>two</b>".to_vec()).await.unwrap();
        q.close().await.unwrap();
    });
    let store = q.store().clone();
    drop(q);
    while std::sync::Arc::strong_count(&store) > 1 {
        std::thread::yield_now();
    }
    path
}

/// A running `leaseq web ...` and the address it says it serves.
struct Served {
    child: Child,
    port: u16,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(args: &[&str], env: &[(&str, &str)]) -> Served {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_leaseq"));
    cmd.args(args)
        .env_remove("LEASEQ_WEB_TOKEN")
        .env_remove("LEASEQ_WEB_PASSWORD")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("run leaseq");
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // "leaseq: dashboard on http://ADDR:PORT/ (...)"
    let port = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|addr| addr.rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    Served { child, port }
}

/// A GET over HTTP/1.0: the status line and the whole response.
fn get(port: u16, path: &str, auth: Option<&str>) -> (String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let auth = auth.map_or(String::new(), |a| format!("Authorization: {a}\r\n"));
    write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n{auth}\r\n").unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).unwrap();
    let status = response.lines().next().unwrap_or_default().to_string();
    (status, response)
}

/// Runs `leaseq <args>` with no credentials in the environment; asserts it is refused as a
/// usage error (exit 2) and returns what it said.
fn refused(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_leaseq"))
        .args(args)
        .env_remove("LEASEQ_WEB_TOKEN")
        .env_remove("LEASEQ_WEB_PASSWORD")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    err
}

#[test]
fn a_files_dashboard_is_served_on_loopback() {
    let path = fixture("loopback");
    let file = path.to_str().unwrap();
    let served = serve(&["web", "sqlite", file, "--addr", "127.0.0.1:0"], &[]);
    let (status, page) = get(served.port, "/", None);
    assert_eq!(status, "HTTP/1.0 200 OK", "{page}");
    assert!(page.contains("<tr data-queue=\"billing\">"), "{page}");
    assert!(page.contains("data-count=\"ready\">2<"), "{page}");
    assert!(!page.contains(file), "the file's path is not shown: {page}");
    let (status, page) = get(served.port, "/queues/billing", None);
    assert_eq!(status, "HTTP/1.0 200 OK");
    assert!(
        page.contains("&lt;b&gt;two&lt;/b&gt;") && !page.contains("<b>two"),
        "{page}"
    );
    drop(served);
    remove(&path);
}

#[test]
fn off_loopback_credentials_come_from_the_environment() {
    let path = fixture("auth");
    let file = path.to_str().unwrap();
    let err = refused(&["web", "sqlite", file, "--addr", "0.0.0.0:0"]);
    assert!(
        err.contains("0.0.0.0:0 is not a loopback address: set LEASEQ_WEB_TOKEN"),
        "{err}"
    );

    let served = serve(
        &["web", "sqlite", file, "--addr", "0.0.0.0:0"],
        &[("LEASEQ_WEB_TOKEN", "t0ken")],
    );
    let (status, _) = get(served.port, "/", None);
    assert_eq!(status, "HTTP/1.0 401 Unauthorized");
    let (status, page) = get(served.port, "/", Some("Bearer t0ken"));
    assert_eq!(status, "HTTP/1.0 200 OK", "{page}");
    drop(served);

    let served = serve(
        &[
            "web",
            "sqlite",
            file,
            "--addr",
            "0.0.0.0:0",
            "--user",
            "ops",
        ],
        &[("LEASEQ_WEB_PASSWORD", "pw")],
    );
    let (status, _) = get(served.port, "/", Some("Basic b3BzOnB4"));
    assert_eq!(status, "HTTP/1.0 401 Unauthorized");
    // "ops:pw"
    let (status, _) = get(served.port, "/", Some("Basic b3BzOnB3"));
    assert_eq!(status, "HTTP/1.0 200 OK");
    drop(served);
    remove(&path);
}

#[test]
fn a_missing_file_or_password_is_refused() {
    let missing = temp("missing");
    let out = Command::new(env!("CARGO_BIN_EXE_leaseq"))
        .args(["web", "sqlite", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!missing.exists(), "no file made");
    let path = fixture("nopassword");
    let err = refused(&["web", "sqlite", path.to_str().unwrap(), "--user", "ops"]);
    assert!(err.contains("LEASEQ_WEB_PASSWORD"), "{err}");
    remove(&path);
}
