//! How a pool stops: [`Pool::shutdown`] with its grace (handlers told at once, those still
//! running at the end cut off and their items put back uncounted), [`Pool::shutdown_on`] a
//! signal, and the drop (the same with no grace).

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::future::{select, Either};

use super::{snapshot, Pool, PoolReport};
use crate::diagnosis::diagnose;
use crate::runtime::Runtime;
use crate::store::Store;

impl<T: Clone + Send + Sync + 'static, R: Runtime, S: Store<T, Runtime = R>> Pool<T, R, S> {
    /// [`shutdown`](Self::shutdown) once `signal` completes: a Ctrl-C future, a channel's
    /// receive, a cancellation token's `cancelled()`. The pool works on until then.
    ///
    /// For a service: `pool.shutdown_on(leaseq_tokio::shutdown_signal(), grace)` (SIGTERM or
    /// SIGINT; `leaseq_smol` has it too), then `queue.close().await` (see
    /// [`shutdown`](Self::shutdown)).
    pub async fn shutdown_on(
        self,
        signal: impl Future<Output = ()>,
        grace: Duration,
    ) -> PoolReport {
        signal.await;
        self.shutdown(grace).await
    }

    /// Graceful shutdown: workers take no new items, and every running handler is told at
    /// once ([`Job::stopping`](crate::Job::stopping) completes,
    /// [`Job::is_stopping`](crate::Job::is_stopping) turns true). Those in flight get until
    /// `grace` to finish:
    ///
    /// - A handler that returns within the grace settles as usual: `Ok` is acked; an error
    ///   is a failure like any other, even one returned because of the stop: counted,
    ///   retried or dead-lettered by the queue's (or its kind's) rules. The item timeout
    ///   still applies. The exception is [`JobError::stopped`](crate::JobError::stopped):
    ///   the handler gives its item back, put back uncounted at once, as at the end of the
    ///   grace (below).
    /// - A handler still running when the grace ends is cut off: its future is dropped (a
    ///   blocking handler's thread runs on, as after a timeout) and its item is **put back
    ///   uncounted** ([`Store::put_back`]): the attempt not counted, its checkpoint kept, the
    ///   item visible at once to the next process. [`PoolReport::put_back`] lists them. So a
    ///   deploy never uses up an item's attempts nor dead-letters it.
    ///
    /// A long handler that watches [`Job::stopping`](crate::Job::stopping) checkpoints and
    /// carries on (or waits); cut off, it resumes there in the next process, on the same
    /// attempt. Nothing is lost.
    /// The queue stays open: await its [`close`](crate::LeaseQueue::close) before the process
    /// exits, so that a durable store has committed the put-backs. A pool dropped without
    /// this stops the same way with no grace. ([`abort_worker`](Self::abort_worker) is a
    /// crash, not a stop: its item is handed back, counted.)
    pub async fn shutdown(mut self, grace: Duration) -> PoolReport {
        let rt = self.queue.runtime().clone();
        let start = rt.now();
        self.shared.stop.ask();
        if let Some((fetcher, _)) = &self.fetcher {
            fetcher.stop();
        }
        let deadline = start.saturating_add(grace);
        let tasks: Vec<(usize, R::Task)> =
            std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|e| e.into_inner()))
                .into_iter()
                .enumerate()
                .filter_map(|(i, t)| t.map(|t| (i, t)))
                .collect();
        let mut handed_back = 0;
        let mut handed_back_items = Vec::new();
        for (index, mut task) in tasks {
            let finished = {
                let sleep = pin!(rt.sleep_until(deadline));
                matches!(select(&mut task, sleep).await, Either::Left(_))
            };
            if !finished {
                // The grace is over: what this worker and the rest still hold goes back
                // uncounted as they are aborted (`cut_off.rs`).
                self.shared.cut.store(true, Ordering::Release);
                handed_back += 1;
                let held = self
                    .shared
                    .board
                    .workers
                    .get(index)
                    .and_then(|p| p.holding());
                handed_back_items.extend(held.map(|(_, holding)| holding.id));
                rt.abort(&mut task);
                task.await;
            }
        }
        // The fetcher saw the stop: it ends and puts back what it had leased ahead.
        if let Some((_, task)) = self.fetcher.take() {
            task.await;
        }
        // Settles handed over by the workers: answered (committed) before the report, if
        // they can be within the grace.
        if let Some(completer) = &self.shared.completer {
            let sleep = pin!(rt.sleep_until(deadline));
            select(pin!(completer.wait_idle()), sleep).await;
            completer.close();
        }
        self.watchdog_done.store(true, Ordering::Release);
        if let Some(mut w) = self.watchdog.take() {
            rt.abort(&mut w);
        }
        let stats = snapshot(&self.queue, &self.shared);
        let diagnosis = diagnose(&stats.queue, Some(&stats), self.queue.visibility());
        let stuck = self.shared.board.reports.lock().clone();
        let put_back = std::mem::take(
            &mut *self
                .shared
                .put_back
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        );
        PoolReport {
            stats,
            took: rt.now().saturating_duration_since(start),
            handed_back,
            handed_back_items,
            put_back,
            stuck,
            diagnosis,
        }
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> Drop for Pool<T, R, S> {
    /// Stops the workers at once, as [`Pool::shutdown`] with no grace would: none goes on
    /// detached, handlers are told ([`Job::stopping`](crate::Job::stopping)), and the items
    /// they held go back to the queue uncounted. (After `shutdown` there is nothing left to stop.)
    fn drop(&mut self) {
        self.shared.stop.ask();
        // No grace: whatever a worker holds as it is aborted goes back uncounted.
        self.shared.cut.store(true, Ordering::Release);
        self.watchdog_done.store(true, Ordering::Release);
        let rt = self.queue.runtime();
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        for task in tasks.iter_mut().flatten() {
            rt.abort(task);
        }
        tasks.clear();
        if let Some(mut w) = self.watchdog.take() {
            rt.abort(&mut w);
        }
        if let Some((fetcher, mut task)) = self.fetcher.take() {
            fetcher.stop();
            rt.abort(&mut task);
        }
        // The completer's task finishes the settles handed over, then ends.
        if let Some(completer) = &self.shared.completer {
            completer.close();
        }
    }
}
