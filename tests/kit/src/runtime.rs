//! A multi-thread tokio runtime as `#[tokio::test(flavor = "multi_thread", worker_threads =
//! 2)]` builds it (written out: the suites' tokio has no `macros` feature), and a test's
//! async body run as a task on it.

use std::future::Future;

/// A multi-thread tokio runtime with two workers, its clock and I/O enabled.
pub fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build a tokio runtime")
}

/// Runs `body` as a task of a fresh [`multi_thread`] runtime (on its workers, not on the
/// blocked test thread) and returns what it returned; a panic in it fails the test.
pub fn spawned<F>(body: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    multi_thread().block_on(async { tokio::spawn(body).await.expect("the test's task") })
}
