//! A task of an `async-executor` executor (smol's executor), as a [`Runtime`] task.
//!
//! [`Runtime`]: crate::Runtime

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use async_executor::Task;

/// A task spawned on an `async-executor` executor (smol's, and `SimRuntime`'s), or on the
/// `blocking` thread pool. Dropping it lets the task run on (it is detached);
/// [`abort`](Self::abort) cancels it, and awaiting it after that completes once the task's
/// future has been dropped.
pub struct ExecutorTask(State);

enum State {
    Running(Task<()>),
    /// Aborted: completes once the executor has dropped the task's future.
    Cancelling(Pin<Box<dyn Future<Output = Option<()>> + Send>>),
    Done,
}

impl ExecutorTask {
    /// Wraps a spawned task.
    pub fn new(task: Task<()>) -> Self {
        ExecutorTask(State::Running(task))
    }

    /// Cancels the task. Cancelling an async-task only marks it: the executor drops its
    /// future at its next turn (or when its current poll ends). So that awaiting the aborted
    /// task waits for that drop (and for a delivery it held to be handed back), this keeps
    /// `cancel()`'s future, polled once now to mark the task.
    pub fn abort(&mut self) {
        if let State::Running(t) = std::mem::replace(&mut self.0, State::Done) {
            let mut cancel: Pin<Box<dyn Future<Output = Option<()>> + Send>> = Box::pin(t.cancel());
            if cancel
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_pending()
            {
                self.0 = State::Cancelling(cancel);
            }
        }
    }
}

impl Future for ExecutorTask {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let ready = match &mut self.0 {
            State::Done => return Poll::Ready(()),
            State::Running(task) => Pin::new(task).poll(cx).is_ready(),
            State::Cancelling(cancel) => cancel.as_mut().poll(cx).is_ready(),
        };
        if ready {
            self.0 = State::Done;
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Drop for ExecutorTask {
    fn drop(&mut self) {
        if let State::Running(task) = std::mem::replace(&mut self.0, State::Done) {
            task.detach();
        }
    }
}

impl std::fmt::Debug for ExecutorTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            State::Running(_) => "ExecutorTask(running)",
            State::Cancelling(_) => "ExecutorTask(cancelling)",
            State::Done => "ExecutorTask(done)",
        })
    }
}
