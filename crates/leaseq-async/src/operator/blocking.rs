//! [`on_blocking_thread`]: a blocking call awaited from async code, for an operator whose
//! store reads block (a SQLite file).

use std::panic::{catch_unwind, AssertUnwindSafe};

use futures::channel::oneshot;

use crate::runtime::Runtime;

use super::OperatorError;

/// Runs `work` on `rt`'s blocking threads and awaits its result; a `work` that panicked
/// (or a runtime that dropped it) is an [`OperatorError::Store`] saying the call did not
/// finish.
///
/// ```
/// # use leaseq_async::SimRuntime;
/// use leaseq_async::operator::on_blocking_thread;
///
/// # let rt = SimRuntime::new();
/// # rt.block_on(async {
/// assert_eq!(on_blocking_thread(&rt, || 6 * 7).await, Ok(42));
/// # });
/// ```
pub async fn on_blocking_thread<R, T>(
    rt: &R,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, OperatorError>
where
    R: Runtime,
    T: Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let task = rt.spawn_blocking(Box::new(move || {
        let _ = tx.send(catch_unwind(AssertUnwindSafe(work)));
    }));
    drop(task);
    match rx.await {
        Ok(Ok(done)) => Ok(done),
        Ok(Err(_)) => Err(OperatorError::Store("the read panicked".into())),
        Err(_) => Err(OperatorError::Store("the read did not finish".into())),
    }
}
