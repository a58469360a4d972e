//! The Postgres store as a scenario store ([`Postgres`]): each queue a new name in this test
//! process's own schema (`leaseq_test_<pid>_<nanos>`) of the server the crate's own tests
//! use (`LEASEQ_PG_URL`), with the store's periods short next to the scenario's unit.
//!
//! The builder is given no runtime: it takes a `TokioRuntime` of the current tokio
//! runtime, whose clock has its own epoch (the moment of `open`). So the store's and the
//! pool's timestamps (deadlines, the watchdog's `since`) are a few ms behind the scenario's
//! `env.now()` for the same instant. On real time the scenarios compare such timestamps only
//! in `watchdog_reports_stuck_worker`'s `since <= handler_start`, which that offset can
//! only loosen, by the time `open` took.
//!
//! The store's admin calls are async while [`InspectStore`] is sync: they are run with
//! [`bridge`] (`block_in_place` + `Handle::block_on`), which needs tokio's multi-thread
//! runtime; the store runs on tokio only anyway.
#![allow(dead_code)]

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use leaseq_async::{Config, ConservationError, LeaseQueue, Page, Stats, Store};
use leaseq_postgres::{Codec, CodecError, Options, PgStore};
use leaseq_tokio::TokioRuntime;

use crate::scenarios::{Dead, InspectStore, Item, StoreKind};

/// Finding the server (or saying loudly that there is none), shared with the crate's tests.
use leaseq_test_kit::pg as server;

/// The schema the scenario queues live in: this test process's own (see the crate's
/// tests' `common::SCHEMA`), so that two runs against one database never share tables.
pub(crate) use server::SCHEMA;

/// The server's connection string, or `None` after the loud SKIPPED note (a panic instead
/// with `LEASEQ_PG_REQUIRED=1`). Looked up once per test binary.
pub(crate) fn server_url() -> Option<String> {
    static URL: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    URL.get_or_init(|| {
        let url = server::server();
        if url.is_none() {
            // `eprintln!` in a test that passes is swallowed by the test harness: the note
            // goes to the process's stderr itself, once.
            use std::io::Write;
            let tried =
                std::env::var(server::URL_VAR).unwrap_or_else(|_| server::DEFAULT_URL.to_string());
            let _ = writeln!(
                std::io::stderr(),
                "\n!!! SKIPPED: the Postgres scenarios: PostgreSQL at {tried:?} cannot be \
                 reached.\n!!! Point {} at a server, or set {}=1 to fail instead.\n",
                server::URL_VAR,
                server::REQUIRED_VAR
            );
        }
        url
    })
    .clone()
}

/// Runs the scenarios of one test binary one at a time: each runs in real time with
/// background tasks of its own, and several at once on a loaded 2-core machine stretch a
/// real-time scenario's waits past what it allows (a shutdown's grace, say).
pub(crate) fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Any scenario [`Item`], by its own bytes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ItemCodec;

impl<T: Item> Codec<T> for ItemCodec {
    fn encode(&self, item: &T) -> Result<Vec<u8>, CodecError> {
        Ok(item.to_bytes())
    }
    fn decode(&self, bytes: &[u8]) -> Result<T, CodecError> {
        T::from_bytes(bytes).ok_or_else(|| CodecError("bad item bytes".into()))
    }
}

/// Runs `fut` to completion from synchronous code inside the multi-thread runtime (a
/// worker thread, or the thread in `Runtime::block_on`): the thread leaves the runtime for
/// the while, its other tasks go on running on the other workers.
pub(crate) fn bridge<F: Future>(fut: F) -> F::Output {
    let handle = tokio::runtime::Handle::current();
    tokio::task::block_in_place(|| handle.block_on(fut))
}

/// Queues on the Postgres store at `url`, each under a name no other queue uses.
#[derive(Clone, Debug)]
pub(crate) struct Postgres {
    pub(crate) url: String,
    /// The scenario's time unit: the store's periods are set from it.
    pub(crate) u: Duration,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

impl StoreKind<TokioRuntime> for Postgres {
    type Store<T: Item> = PgStore<T>;
    // A receive waits for the claim's commit.
    const RECEIVES_AT_ONCE: bool = false;
    // A push shows once the writer task committed it and the claimer claimed it; a dropped
    // delivery goes back once the settler task committed it; the gauges are the rows as
    // counted.
    const VISIBLE_AT_ONCE: bool = false;

    fn queue<T: Item>(
        &self,
        _rt: &TokioRuntime,
        config: Config,
        heartbeat_every: Option<Duration>,
    ) -> LeaseQueue<T, TokioRuntime, PgStore<T>> {
        let name = format!(
            "scenario-{}-{}",
            server::unique("q"),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let options = Options::new()
            .schema(SCHEMA)
            // Leases that run out (scenario 3) come back within a quarter unit; receivers
            // look at the table every unit when no notification came (none is missed here:
            // one process).
            .rescue_every(self.u / 4)
            .poll_interval(self.u);
        let mut builder = LeaseQueue::<T, TokioRuntime>::builder(config)
            .name(name.clone())
            .codec(ItemCodec);
        if let Some(every) = heartbeat_every {
            builder = builder.heartbeat_every(every);
        }
        let url = self.url.clone();
        bridge(builder.open(leaseq_postgres::Postgres::url(&*url).options(options)))
            .unwrap_or_else(|e| panic!("open queue {name:?} on {url:?}: {e}"))
    }
}

/// The queue's stats with its row counts read now (the counters are this process's; every
/// queue of the scenarios is used by this process only, so they are the queue's).
pub(crate) fn fresh_stats<T: Item>(q: &LeaseQueue<T, TokioRuntime, PgStore<T>>) -> Stats {
    bridge(q.store().refresh_stats())
        .unwrap_or_else(|e| panic!("count rows: {e}; last error: {:?}", q.store().last_error()))
}

impl<T: Item> InspectStore<T> for PgStore<T> {
    fn dead_letter_list(q: &LeaseQueue<T, TokioRuntime, Self>) -> Vec<Dead> {
        bridge(q.store().dead_letters(Page::ALL))
            .unwrap_or_else(|e| panic!("read dead letters: {e}"))
            .into_iter()
            .map(|d| Dead {
                id: d.id,
                attempts: d.attempts,
                reason: d.reason,
                last_error: d.last_error,
                at: d.at,
            })
            .collect()
    }
    fn invariants(q: &LeaseQueue<T, TokioRuntime, Self>) -> Result<(), ConservationError> {
        // Every accepted push committed first (`pushed` counts committed rows), then the
        // rows counted: conservation of this process's counters against the table holds
        // while no other process uses the queue, as here.
        bridge(q.store().synced()).expect("every accepted push committed");
        fresh_stats(q).check_conservation()
    }
    fn heartbeat_count(q: &LeaseQueue<T, TokioRuntime, Self>) -> Option<usize> {
        Some(q.store().heartbeats())
    }
    fn fresh_stats(q: &LeaseQueue<T, TokioRuntime, Self>) -> Stats {
        fresh_stats(q)
    }
}
