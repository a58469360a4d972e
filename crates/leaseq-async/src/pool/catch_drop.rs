//! A pool handler's future whose drop cannot unwind into the executor.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;

use crate::pool::handler::HandlerResult;
use crate::pool::stats::Counters;

/// A handler's future whose drop cannot unwind: a panic in a `Drop` of its locals, when it
/// is cancelled (timed out, or its worker aborted or shut down), is caught and counted.
/// Executors treat a panic while dropping a task's future differently (async-executor, and
/// so smol, aborts the process), so none may escape. The future is pinned in its worker's
/// own future (no box per item) and dropped in place.
pub(crate) struct CatchDrop<'a, F: Future<Output = HandlerResult>> {
    pub(crate) fut: Pin<&'a mut Option<F>>,
    pub(crate) counters: &'a Counters,
}

impl<F: Future<Output = HandlerResult>> Future for CatchDrop<'_, F> {
    type Output = HandlerResult;
    fn poll(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<HandlerResult> {
        match self.fut.as_mut().as_pin_mut() {
            Some(fut) => fut.poll(cx),
            None => std::task::Poll::Pending,
        }
    }
}

impl<F: Future<Output = HandlerResult>> Drop for CatchDrop<'_, F> {
    fn drop(&mut self) {
        // Dropped in place: if its drop panics, the slot is still left empty.
        let fut = &mut self.fut;
        if catch_unwind(AssertUnwindSafe(|| fut.set(None))).is_err() {
            Counters::bump(&self.counters.worker_panics);
        }
    }
}
