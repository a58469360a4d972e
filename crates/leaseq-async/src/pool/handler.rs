//! The handler as the workers call it: its future's type known to them, or boxed.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures::future::Map;
use futures::FutureExt;

use crate::job_error::JobError;
use crate::pool::job::Job;

/// What a handler run gives: its result, or the message of a panic caught on the way.
pub(crate) type HandlerResult = Result<Result<(), JobError>, String>;

/// A handler boxed once and shared by all workers, its futures boxed per handling (blocking
/// handlers' and the router's).
pub(crate) type Handler<T> =
    Arc<dyn Fn(Job<T>) -> Pin<Box<dyn Future<Output = HandlerResult> + Send>> + Send + Sync>;

/// A handler the workers are generic over, so that they hold its future in their own
/// (no allocation per item for an async handler: `Pool::spawn`'s).
pub(crate) trait Handle<T>: Send + Sync + 'static {
    /// One handling.
    type Fut: Future<Output = HandlerResult> + Send;
    /// Starts the handling of `job`.
    fn call(&self, job: Job<T>) -> Self::Fut;
}

impl<T: 'static> Handle<T> for Handler<T> {
    type Fut = Pin<Box<dyn Future<Output = HandlerResult> + Send>>;
    fn call(&self, job: Job<T>) -> Self::Fut {
        self(job)
    }
}

/// The result of a handler's future that returned, as a [`HandlerResult`].
type Returned = fn(Result<(), JobError>) -> HandlerResult;

/// An async handler as `Pool::spawn` takes it, its future unboxed.
pub(crate) struct AsyncHandler<H>(pub(crate) H);

impl<T, H, F> Handle<T> for AsyncHandler<H>
where
    T: 'static,
    H: Fn(Job<T>) -> F + Send + Sync + 'static,
    F: Future<Output = Result<(), JobError>> + Send + 'static,
{
    type Fut = Map<F, Returned>;
    fn call(&self, job: Job<T>) -> Self::Fut {
        (self.0)(job).map(Ok as Returned)
    }
}
