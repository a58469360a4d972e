//! What the CLI's tests share: the `leaseq` binary run (on a file, on a Postgres schema), a
//! queue file opened and
//! closed as the owner the CLI finds (named `billing`), the sample file of
//! `cli_fixture`, and a snapshot of the file and its sidecars.

#![allow(dead_code)] // each test binary uses a part

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use leaseq_async::{Config, LeaseQueue};
use leaseq_smol::SmolRuntime;
use leaseq_sqlite::{BytesCodec, Options, Sqlite};
use leaseq_test_kit::output;
use leaseq_test_kit::sqlite::{temp, BytesQueue as Queue};
use leaseq_test_kit::steps::cli_fixture;

pub(crate) use leaseq_test_kit::sqlite::shut;

pub(crate) mod graph;

/// Runs the `leaseq` binary with `args` to its end.
pub(crate) fn leaseq(args: &[&str]) -> Output {
    output::run(env!("CARGO_BIN_EXE_leaseq"), args)
}

/// `leaseq sqlite <path> <args>`.
pub(crate) fn sqlite(path: &Path, args: &[&str]) -> Output {
    let file = path.to_str().unwrap();
    leaseq(&[&["sqlite", file][..], args].concat())
}

/// `leaseq postgres <url> --schema <schema> <args>`.
pub(crate) fn postgres(url: &str, schema: &str, args: &[&str]) -> Output {
    leaseq(&[&["postgres", url, "--schema", schema][..], args].concat())
}

/// Opens the queue `billing` in the file at `path` with `options` (one attempt an item).
pub(crate) fn open_with(path: &Path, options: Options) -> Queue {
    smol::block_on(
        LeaseQueue::builder(Config::new(Duration::from_secs(30)).with_max_attempts(1))
            .runtime(SmolRuntime::global())
            .name("billing")
            .codec(BytesCodec)
            .open(Sqlite::file(path).options(options)),
    )
    .unwrap()
}

/// [`open_with`] the default options.
pub(crate) fn open(path: &Path) -> Queue {
    open_with(path, Options::default())
}

/// A file with a ready item, a delayed one, and three dead letters: an email nacked out of
/// its attempts, an sms rejected by its handler, raw binary bytes nacked.
pub(crate) fn fixture(name: &str) -> PathBuf {
    let path = temp(name);
    let q = open(&path);
    smol::block_on(async {
        cli_fixture(&q).await;
    });
    shut(q);
    path
}

/// The file, its WAL, shared memory and owner lock: whether each exists, its length and
/// a hash of its bytes.
pub(crate) fn snapshot(path: &Path) -> Vec<(String, Option<(usize, u64)>)> {
    use std::hash::{Hash, Hasher};
    ["", "-wal", "-shm", "-lock"]
        .iter()
        .map(|s| {
            let p = format!("{}{s}", path.display());
            let seen = std::fs::read(&p).ok().map(|bytes| {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                bytes.hash(&mut h);
                (bytes.len(), h.finish())
            });
            (s.to_string(), seen)
        })
        .collect()
}
