//! [`shutdown_signal`]: the process's stop signal, for a pool's `shutdown_on`.

use std::future::Future;

use async_signal::{Signal, Signals};
use smol::stream::StreamExt;

/// Completes when the process is asked to stop: SIGTERM (what `kill`, systemd, Docker and
/// Kubernetes send at a deploy) or SIGINT (Ctrl-C) on unix; Ctrl-C elsewhere. The normal
/// way to stop a service's pool:
///
/// ```no_run
/// use std::time::Duration;
/// use leaseq_smol::{Config, Job, LeaseQueue, Pool, SmolRuntime};
///
/// smol::block_on(async {
///     let queue: LeaseQueue<u32> =
///         LeaseQueue::with_runtime(SmolRuntime::global(), Config::new(Duration::from_secs(30)))
///             .unwrap();
///     let pool = Pool::builder(queue.clone()).spawn(|job: Job<u32>| async move {
///         // Long work watches `job.stopping()` and checkpoints (see `Job::stopping`).
///         let _ = job.item;
///         Ok(())
///     });
///     // Runs until SIGTERM or Ctrl-C; then handlers are told, get 10 s, and what is still
///     // running is put back uncounted for the next process.
///     let report = pool
///         .shutdown_on(leaseq_smol::shutdown_signal(), Duration::from_secs(10))
///         .await;
///     eprintln!("{report}");
///     // A durable store commits the put-backs before the process exits.
///     queue.close().await.unwrap();
/// });
/// ```
///
/// The handlers (the `async-signal` crate's) are installed when this is called, so a
/// signal that arrives before the future is awaited is not lost; they are removed when the
/// future is dropped. If the OS refuses them the future never completes, and the signals
/// keep their default action (the process ends at once).
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let kinds = [Signal::Term, Signal::Int];
    #[cfg(not(unix))]
    let kinds = [Signal::Int];
    let signals = Signals::new(kinds);
    async move {
        match signals {
            // A read error of its pipe ends the wait too: better a graceful stop than a
            // signal swallowed for good.
            Ok(mut signals) => drop(signals.next().await),
            Err(_) => std::future::pending().await,
        }
    }
}
