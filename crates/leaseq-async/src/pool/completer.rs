//! The pool's completer: settles that the workers handed over finish here, all of them
//! at once, so that a worker goes on to its next item without waiting for its store's
//! commit.
//!
//! A worker makes its settle (an ack, nack or dead-letter is applied at the call, or queued
//! by the store for its next batch) and polls it once; if the store has not answered yet
//! (a durable store answers once the change is committed), the settle's future, which also
//! records the answer in the pool's stats, is handed to the completer's one task. That task
//! polls all of them: the store commits them together (one SQLite transaction, one
//! Postgres statement per batch), and each answer is counted as a worker would have
//! counted it. A shutdown waits for them ([`Completer::wait_idle`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use event_listener::Event;
use futures::stream::{FuturesUnordered, StreamExt};
use futures::task::AtomicWaker;

use crate::runtime::BoxFuture;

/// Settles handed over by the workers, until their stores answer.
#[derive(Default)]
pub(crate) struct Completer {
    /// Handed over since the task last looked.
    inbox: Mutex<Vec<BoxFuture>>,
    /// The task, to be woken when something is handed over.
    task: AtomicWaker,
    /// Handed over and not yet answered.
    pending: AtomicUsize,
    /// Notified when `pending` reaches zero.
    idle: Event,
    /// No more will come: the task ends once everything pending is answered.
    closed: AtomicBool,
}

impl Completer {
    /// Hands a settle over; it is polled by the completer's task until it completes.
    pub(crate) fn submit(&self, settle: BoxFuture) {
        self.pending.fetch_add(1, Ordering::AcqRel);
        self.inbox
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(settle);
        self.task.wake();
    }

    /// Settles handed over and not yet answered.
    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    /// Completes once nothing handed over is waiting for its answer.
    pub(crate) async fn wait_idle(&self) {
        loop {
            if self.pending() == 0 {
                return;
            }
            let listener = self.idle.listen();
            if self.pending() == 0 {
                return;
            }
            listener.await;
        }
    }

    /// No more settles will come: the task ends once those pending are answered.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.task.wake();
    }

    /// The completer's task.
    pub(crate) fn run(self: Arc<Self>) -> impl Future<Output = ()> + Send + 'static {
        Run {
            completer: self,
            running: FuturesUnordered::new(),
        }
    }
}

/// The completer's task: polls every settle handed over.
struct Run {
    completer: Arc<Completer>,
    running: FuturesUnordered<BoxFuture>,
}

impl Future for Run {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let c = &*this.completer;
        // Registered before the inbox is read: a settle handed over after the read wakes
        // the task again.
        c.task.register(cx.waker());
        let closed = c.closed.load(Ordering::Acquire);
        this.running
            .extend(c.inbox.lock().unwrap_or_else(|e| e.into_inner()).drain(..));
        while let Poll::Ready(Some(())) = this.running.poll_next_unpin(cx) {
            if c.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
                c.idle.notify(usize::MAX);
            }
        }
        // `closed` was read before the inbox: whatever was handed over before the close is
        // in `running` now.
        if closed && this.running.is_empty() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use super::Completer;
    use crate::{Runtime, SimRuntime};

    /// Settles handed over complete in the task, whoever handed them over; `wait_idle`
    /// waits for the last one, and the task ends once closed and drained.
    #[test]
    fn settles_finish_in_the_task_and_idle_waits_for_the_last() {
        let rt = SimRuntime::new();
        rt.block_on({
            let rt = rt.clone();
            async move {
                let c = Arc::new(Completer::default());
                let task = rt.spawn(Box::pin(c.clone().run()));
                let done = Arc::new(AtomicUsize::new(0));
                for ms in [30u64, 10, 20] {
                    let (rt2, done) = (rt.clone(), done.clone());
                    c.submit(Box::pin(async move {
                        rt2.sleep_until(rt2.now().saturating_add(Duration::from_millis(ms)))
                            .await;
                        done.fetch_add(1, Ordering::SeqCst);
                    }));
                }
                assert_eq!(c.pending(), 3);
                let start = rt.now();
                c.wait_idle().await;
                assert_eq!(done.load(Ordering::SeqCst), 3);
                assert_eq!(rt.now(), start.saturating_add(Duration::from_millis(30)));
                c.close();
                task.await;
                assert_eq!(c.pending(), 0);
            }
        });
    }
}
