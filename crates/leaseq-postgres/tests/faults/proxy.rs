//! A loopback TCP proxy between the store and the server that, driven by a seed, breaks
//! connections at the end of a client request (a `Sync` or a simple `Query` message of the
//! PostgreSQL protocol): every statement the store runs (pushes, claims, heartbeats,
//! settles, the rescuer) is one or more such requests on the same pooled connections.
//!
//! - **Lost reply**: the request is forwarded, its reply (and every reply still due on that
//!   connection) swallowed, then both sides reset: the statement ran, the client never
//!   hears of it.
//! - **Reset**: both sides reset at once, the request forwarded first or not (a coin
//!   toss): the statement ran, may run, or never reached the server.
//! - **Stall**: nothing moves either way for a while, then everything goes on.
//!
//! Faults of each kind are injected until the kind's quota is met; the counts say how many.

#![allow(dead_code)] // each test binary uses a part

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use leaseq_test_kit::rng::Rng;
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[path = "proxy_conn.rs"]
mod conn;
use conn::Conn;

/// The kinds of fault, in the order of [`Proxy::counts`].
pub(crate) const KINDS: [&str; 3] = ["lost reply", "reset", "stall"];

/// What the proxy does to one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    None,
    LostReply,
    Reset { forward: bool },
    Stall(Duration),
}

/// The proxy's shared state: the seed's generator, the quotas and the counts.
pub(crate) struct Proxy {
    /// The address the store connects to.
    pub(crate) port: u16,
    rng: Mutex<Rng>,
    /// One request in `one_in` is faulted (while quotas remain).
    one_in: u64,
    quota: u64,
    counts: [AtomicU64; 3],
    /// Requests seen, for the report.
    pub(crate) requests: AtomicU64,
    /// Cleared to stop injecting (the end of a run: the check needs a calm server).
    pub(crate) armed: AtomicBool,
    /// The longest stall.
    max_stall: Duration,
    /// A statement text (a part of it) whose next request's reply is lost, once.
    pub(crate) target: Mutex<Option<Vec<u8>>>,
    /// The target is a statement whose transaction's `COMMIT` loses its reply.
    commit_after: Mutex<bool>,
    /// While set, the server is out of reach: new connections are reset at once, open ones
    /// at their next request.
    pub(crate) blocked: AtomicBool,
}

impl Proxy {
    /// Starts a proxy to `upstream` on a free loopback port: `quota` faults of each kind at
    /// most, one request in `one_in` faulted.
    pub(crate) async fn start(
        upstream: &str,
        seed: u64,
        quota: u64,
        one_in: u64,
        max_stall: Duration,
    ) -> Arc<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let proxy = Arc::new(Proxy {
            port,
            rng: Mutex::new(Rng(seed)),
            one_in,
            quota,
            counts: Default::default(),
            requests: AtomicU64::new(0),
            armed: AtomicBool::new(true),
            max_stall,
            target: Mutex::new(None),
            commit_after: Mutex::new(false),
            blocked: AtomicBool::new(false),
        });
        let upstream = upstream.to_string();
        let p = proxy.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if p.blocked.load(Ordering::Acquire) {
                    #[allow(deprecated)] // a zero linger resets at once, never blocks
                    let _ = client.set_linger(Some(Duration::ZERO));
                    continue;
                }
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    continue;
                };
                tokio::spawn(Conn::run(p.clone(), client, server));
            }
        });
        proxy
    }

    /// A proxy to the server at `direct` that injects no fault of its own: it counts
    /// requests ([`requests`](Self::requests)), and loses only the replies targeted with
    /// [`lose_next_reply`](Self::lose_next_reply) or
    /// [`lose_commit_after`](Self::lose_commit_after).
    pub(crate) async fn without_faults(direct: &tokio_postgres::Config) -> Arc<Proxy> {
        Proxy::start(&Proxy::upstream(direct), 1, 0, 1, Duration::from_millis(1)).await
    }

    /// Faults injected so far, by kind ([`KINDS`]).
    pub(crate) fn counts(&self) -> [u64; 3] {
        std::array::from_fn(|i| self.counts[i].load(Ordering::Relaxed))
    }

    /// Where the store connects to reach the server at `direct` through this proxy.
    pub(crate) fn config(&self, direct: &tokio_postgres::Config) -> tokio_postgres::Config {
        let mut via = tokio_postgres::Config::new();
        via.host("127.0.0.1").port(self.port);
        // The proxy reads the protocol's messages: no TLS through it (the store's default,
        // `prefer`, would encrypt when the server offers TLS).
        via.ssl_mode(tokio_postgres::config::SslMode::Disable);
        if let Some(user) = direct.get_user() {
            via.user(user);
        }
        if let Some(db) = direct.get_dbname() {
            via.dbname(db);
        }
        via
    }

    /// The `host:port` of the server at `direct`.
    pub(crate) fn upstream(direct: &tokio_postgres::Config) -> String {
        let host = match direct.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
            _ => "127.0.0.1".to_string(),
        };
        let port = direct.get_ports().first().copied().unwrap_or(5432);
        format!("{host}:{port}")
    }

    /// Loses the reply of the next request that runs a statement containing `part`.
    pub(crate) fn lose_next_reply(&self, part: &str) {
        *self.commit_after.lock() = false;
        *self.target.lock() = Some(part.as_bytes().to_vec());
    }

    /// Loses the reply to the `COMMIT` of the next transaction that runs a statement
    /// containing `part` (on the same connection).
    #[allow(dead_code)] // not every test that includes the proxy uses it
    pub(crate) fn lose_commit_after(&self, part: &str) {
        *self.commit_after.lock() = true;
        *self.target.lock() = Some(part.as_bytes().to_vec());
    }

    /// Whether the targeted statement's reply is still to be lost.
    pub(crate) fn target_pending(&self) -> bool {
        self.target.lock().is_some()
    }

    /// Whether `text` is the targeted statement.
    fn targets(&self, text: &[u8]) -> bool {
        self.target
            .lock()
            .as_deref()
            .is_some_and(|t| contains(text, t))
    }

    /// Whether every quota is met.
    pub(crate) fn done(&self) -> bool {
        self.counts().iter().all(|c| *c >= self.quota)
    }

    /// The fault for the next request (`insert`: it runs the writer's insert, whose lost
    /// replies are the ones that could make a duplicate: one in four is lost).
    fn decide(&self, insert: bool) -> Fault {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if !self.armed.load(Ordering::Relaxed) {
            return Fault::None;
        }
        let mut rng = self.rng.lock();
        if insert && self.counts[0].load(Ordering::Relaxed) < self.quota && rng.one_in(4) {
            self.counts[0].fetch_add(1, Ordering::Relaxed);
            return Fault::LostReply;
        }
        if !rng.one_in(self.one_in) {
            return Fault::None;
        }
        let left: Vec<usize> = (0..3)
            .filter(|k| self.counts[*k].load(Ordering::Relaxed) < self.quota)
            .collect();
        if left.is_empty() {
            return Fault::None;
        }
        let kind = left[(rng.next_u64() % left.len() as u64) as usize];
        self.counts[kind].fetch_add(1, Ordering::Relaxed);
        match kind {
            0 => Fault::LostReply,
            1 => Fault::Reset {
                forward: rng.one_in(2),
            },
            _ => {
                let ms = self.max_stall.as_millis().max(1) as u64;
                Fault::Stall(Duration::from_millis(rng.next_u64() % ms + 1))
            }
        }
    }
}

/// Whether `hay` contains `needle`.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
