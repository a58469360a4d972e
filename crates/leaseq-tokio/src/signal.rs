//! [`shutdown_signal`]: the process's stop signal, for a pool's `shutdown_on`.

use std::future::Future;

/// Completes when the process is asked to stop: SIGTERM (what `kill`, systemd, Docker and
/// Kubernetes send at a deploy) or SIGINT (Ctrl-C) on unix; Ctrl-C elsewhere. The normal
/// way to stop a service's pool:
///
/// ```no_run
/// use std::time::Duration;
/// use leaseq_tokio::{Config, Job, LeaseQueue, Pool};
///
/// #[tokio::main]
/// async fn main() {
///     let queue: LeaseQueue<u32> = LeaseQueue::new(Config::new(Duration::from_secs(30))).unwrap();
///     let pool = Pool::builder(queue.clone()).spawn(|job: Job<u32>| async move {
///         // Long work watches `job.stopping()` and checkpoints (see `Job::stopping`).
///         let _ = job.item;
///         Ok(())
///     });
///     // Runs until SIGTERM or Ctrl-C; then handlers are told, get 10 s, and what is still
///     // running is put back uncounted for the next process.
///     let report = pool
///         .shutdown_on(leaseq_tokio::shutdown_signal(), Duration::from_secs(10))
///         .await;
///     eprintln!("{report}");
///     // A durable store commits the put-backs before the process exits.
///     queue.close().await.unwrap();
/// }
/// ```
///
/// The handlers are installed when this is called inside a tokio runtime (else at the
/// future's first poll), so a signal that arrives before the future is awaited is not lost.
/// Once tokio handles a signal it keeps handling it for the life of the process: a second
/// Ctrl-C no longer kills the process (stop it with SIGKILL).
///
/// # Panics
///
/// As `tokio::signal` does: on a runtime without its IO driver (`#[tokio::main]` has it; a
/// `tokio::runtime::Builder` needs `.enable_io()` or `.enable_all()`), or polled outside a
/// tokio runtime.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    let installed = tokio::runtime::Handle::try_current()
        .is_ok()
        .then(Signals::install);
    async move {
        let signals = match installed {
            Some(signals) => signals,
            None => Signals::install(),
        };
        signals.recv().await;
    }
}

/// SIGTERM's and SIGINT's streams (either may be missing if the OS refused it: the future
/// then waits on the other; with neither, forever).
#[cfg(unix)]
struct Signals(Vec<tokio::signal::unix::Signal>);

#[cfg(unix)]
impl Signals {
    fn install() -> Self {
        use tokio::signal::unix::{signal, SignalKind};
        let kinds = [SignalKind::terminate(), SignalKind::interrupt()];
        Signals(kinds.into_iter().filter_map(|k| signal(k).ok()).collect())
    }

    async fn recv(mut self) {
        std::future::poll_fn(|cx| {
            let got = self.0.iter_mut().any(|s| s.poll_recv(cx).is_ready());
            if got {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        })
        .await
    }
}

/// Ctrl-C (installed at the first poll).
#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn install() -> Self {
        Signals
    }

    async fn recv(self) {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
