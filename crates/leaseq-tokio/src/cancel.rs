//! [`PoolExt`]: a tokio pool's shutdown on a tokio-util [`CancellationToken`].

use std::future::Future;
use std::time::Duration;

use leaseq_async::{PoolReport, Store};
use tokio_util::sync::CancellationToken;

use crate::TokioRuntime;

/// What a tokio [`Pool`](crate::Pool) adds to leaseq's: shutdown on a tokio-util
/// [`CancellationToken`], the usual stop signal of a tokio service.
///
/// ```
/// use std::time::Duration;
/// use leaseq_tokio::{Config, LeaseQueue, Pool, PoolExt};
/// use tokio_util::sync::CancellationToken;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let queue: LeaseQueue<u32> = LeaseQueue::new(Config::new(Duration::from_secs(30))).unwrap();
/// let pool = Pool::builder(queue.clone()).spawn(|_job| async move { Ok(()) });
/// let token = CancellationToken::new();
/// let stopped = tokio::spawn(pool.shutdown_on_cancel(token.clone(), Duration::from_secs(5)));
/// // ... on Ctrl-C, say:
/// token.cancel();
/// let report = stopped.await.unwrap();
/// assert_eq!(report.handed_back, 0);
/// # }
/// ```
pub trait PoolExt: sealed::Sealed {
    /// [`Pool::shutdown_on`](leaseq_async::Pool::shutdown_on) the cancellation of `token`:
    /// the pool works on until `token` is cancelled (at once if it already is), then shuts
    /// down as [`Pool::shutdown`](leaseq_async::Pool::shutdown)`(grace)` does, and the
    /// future completes with its report. The future is `Send`, so it can be spawned.
    fn shutdown_on_cancel(
        self,
        token: CancellationToken,
        grace: Duration,
    ) -> impl Future<Output = PoolReport> + Send;
}

impl<T, S> PoolExt for leaseq_async::Pool<T, TokioRuntime, S>
where
    T: Clone + Send + Sync + 'static,
    S: Store<T, Runtime = TokioRuntime>,
{
    fn shutdown_on_cancel(
        self,
        token: CancellationToken,
        grace: Duration,
    ) -> impl Future<Output = PoolReport> + Send {
        self.shutdown_on(token.cancelled_owned(), grace)
    }
}

mod sealed {
    /// Only this crate implements [`PoolExt`](super::PoolExt): it may gain methods.
    pub trait Sealed {}

    impl<T, S> Sealed for leaseq_async::Pool<T, crate::TokioRuntime, S> where
        S: leaseq_async::Store<T, Runtime = crate::TokioRuntime>
    {
    }
}
