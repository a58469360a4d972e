//! The durable store as a scenario store ([`Sqlite`]): each queue in its own file, removed
//! once the scenario is over.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::{Config, ConservationError, LeaseQueue, Runtime};
use leaseq_sqlite::{Codec, CodecError, SqliteStore};

use crate::scenarios::{Dead, InspectStore, Item, StoreKind};

/// Any scenario [`Item`], by its own bytes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ItemCodec;

/// Runs the scenarios of one test binary one at a time: each runs on real time with a
/// writer thread of its own, and several at once on a loaded 2-core machine stretch a
/// real-time scenario's waits past what it allows (a shutdown's grace, say).
pub(crate) fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

impl<T: Item> Codec<T> for ItemCodec {
    fn encode(&self, item: &T) -> Result<Vec<u8>, CodecError> {
        Ok(item.to_bytes())
    }
    fn decode(&self, bytes: &[u8]) -> Result<T, CodecError> {
        T::from_bytes(bytes).ok_or_else(|| CodecError("bad item bytes".into()))
    }
}

/// Queues on the SQLite store, each in a new file of the temp dir.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sqlite {
    files: Arc<Mutex<Vec<PathBuf>>>,
}

impl Sqlite {
    /// Removes the files of the queues made so far (open ones keep working on Unix).
    pub(crate) fn remove_files(&self) {
        for p in self.files.lock().unwrap().drain(..) {
            for suffix in ["", "-wal", "-shm", "-lock"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", p.display()));
            }
        }
    }
}

static NEXT: AtomicU64 = AtomicU64::new(0);

impl<R: Runtime> StoreKind<R> for Sqlite {
    type Store<T: Item> = SqliteStore<T, R, ItemCodec>;
    const RECEIVES_AT_ONCE: bool = false;

    fn queue<T: Item>(
        &self,
        rt: &R,
        config: Config,
        heartbeat_every: Option<Duration>,
    ) -> LeaseQueue<T, R, Self::Store<T>> {
        let path = std::env::temp_dir().join(format!(
            "leaseq-scenario-{}-{}.db",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        self.files.lock().unwrap().push(path.clone());
        let mut builder = LeaseQueue::builder(config).runtime(rt.clone());
        if let Some(every) = heartbeat_every {
            builder = builder.heartbeat_every(every);
        }
        let open = builder
            .codec(ItemCodec)
            .open(leaseq_sqlite::Sqlite::file(&path));
        smol::block_on(open).expect("open a queue file")
    }
}

impl<T: Item, R: Runtime> InspectStore<T> for SqliteStore<T, R, ItemCodec> {
    fn dead_letter_list(q: &LeaseQueue<T, R, Self>) -> Vec<Dead> {
        q.store()
            .memory()
            .dead_letters()
            .iter()
            .map(Dead::of)
            .collect()
    }
    fn invariants(q: &LeaseQueue<T, R, Self>) -> Result<(), ConservationError> {
        q.store().memory().check_invariants()
    }
    fn heartbeat_count(_: &LeaseQueue<T, R, Self>) -> Option<usize> {
        // The memory store inside does not show its heartbeat table outside a queue on it.
        None
    }
}
