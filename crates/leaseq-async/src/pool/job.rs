//! What a pool handler is given.

use std::sync::Arc;
use std::time::Duration;

use leaseq_core::{MessageId, Timestamp};

use crate::lease_lost::LeaseLost;
use crate::pool::checkpoint::JobContext;
use crate::progress::{CheckpointError, LeaseKey, Progress};
use crate::stop::Stopping;

/// One item handed to a pool handler.
///
/// The handler owns it, so its future can be `'static`. The pool keeps the delivery and
/// settles it from the handler's result. Async and blocking handlers get the same context:
/// id, attempt, [`time_left`](Self::time_left), the lease-lost signal
/// ([`lease_lost`](Self::lease_lost), [`is_lease_lost`](Self::is_lease_lost)) and the
/// pool's stop ([`stopping`](Self::stopping), [`is_stopping`](Self::is_stopping)).
#[non_exhaustive]
pub struct Job<T> {
    /// The item (the handler's own copy).
    pub item: T,
    /// Its message id (the same on every delivery).
    pub id: MessageId,
    /// 1 on the first delivery, 2 on the second, ...
    pub attempt: u32,
    /// When this handling's time is up, on the queue's clock: the item timeout, or the lease
    /// deadline without one. [`time_left`](Self::time_left) says it as a duration.
    pub deadline: Timestamp,
    /// Completes if the lease is lost while the handler runs (an extension refused, the max
    /// lease lifetime reached, or, without heartbeat, the lease deadline passed): the item
    /// will be redone elsewhere, so a handler may stop early.
    pub lease_lost: LeaseLost,
    /// The clock and the store (see `checkpoint.rs`).
    pub(crate) context: Arc<dyn JobContext>,
    /// The item's last checkpoint as the handling began, then this job's own.
    pub(crate) progress: Option<Progress>,
    /// The lease's key, for checkpoints.
    pub(crate) lease: Option<LeaseKey>,
}

impl<T> Job<T> {
    /// The same job holding `item` instead, and the item it held (for a router, which
    /// hands a kind's handler its decoded args).
    #[cfg_attr(not(feature = "router"), allow(dead_code))]
    pub(crate) fn replace_item<U>(self, item: U) -> (T, Job<U>) {
        let Job {
            item: held,
            id,
            attempt,
            deadline,
            lease_lost,
            context,
            progress,
            lease,
        } = self;
        let job = Job {
            item,
            id,
            attempt,
            deadline,
            lease_lost,
            context,
            progress,
            lease,
        };
        (held, job)
    }

    /// How long this handling has left before its item timeout (or, without one, its lease
    /// deadline); zero once it has passed.
    pub fn time_left(&self) -> Duration {
        self.deadline.saturating_duration_since(self.context.now())
    }

    /// Whether the lease is lost already (see [`lease_lost`](Self::lease_lost)): for a
    /// blocking handler to check between steps of long work.
    pub fn is_lease_lost(&self) -> bool {
        self.lease_lost.is_lost()
    }

    /// Completes once the pool begins to stop ([`Pool::shutdown`](crate::Pool::shutdown),
    /// [`shutdown_on`](crate::Pool::shutdown_on)'s signal, or the pool dropped): a deploy.
    /// Cheap (a reference count), `Unpin`, `Send` and `'static`: select it beside the work,
    /// keep it across the job's own `&mut` calls (a checkpoint).
    ///
    /// What follows the stop is decided by how the handler ends:
    ///
    /// - **Returns within the grace**: settled as usual. `Ok` acks the item; an error is a
    ///   real failure, counted, retried or dead-lettered by the rules, even when it was
    ///   returned because of the stop. So do not return an error to give an item back.
    /// - **Still running when the grace ends**: cut off, its item put back uncounted (the
    ///   attempt not counted, its checkpoint kept), visible at once to the next process.
    ///
    /// So a long job, on the stop, records a checkpoint at once (or at the end of its
    /// current step) and carries on, or waits to be cut off; the next process resumes it
    /// from that checkpoint with the same attempt number. The pool waits the whole grace
    /// for a handler that waits: choose a grace that lets a step end.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leaseq_async::{Config, Job, LeaseQueue, Pool, Runtime, SimRuntime};
    ///
    /// let rt = SimRuntime::new();
    /// rt.block_on({
    ///     let rt = rt.clone();
    ///     async move {
    ///         let queue = LeaseQueue::with_runtime(rt.clone(), Config::new(Duration::from_secs(30)))
    ///             .unwrap();
    ///         let id = queue.push("report").await.unwrap();
    ///         // Ten steps of a second each, a checkpoint after each.
    ///         let pool = Pool::builder(queue.clone()).spawn({
    ///             let rt = rt.clone();
    ///             move |mut job: Job<&str>| {
    ///                 let rt = rt.clone();
    ///                 async move {
    ///                     let mut step = job.progress().map_or(0, |p| p.as_bytes()[0]);
    ///                     while step < 10 {
    ///                         rt.sleep_until(rt.now().saturating_add(Duration::from_secs(1))).await;
    ///                         step += 1;
    ///                         job.checkpoint(vec![step]).await?;
    ///                         if job.is_stopping() {
    ///                             // Checkpointed: wait to be cut off; the item goes back
    ///                             // uncounted.
    ///                             job.stopping().await;
    ///                             std::future::pending::<()>().await;
    ///                         }
    ///                     }
    ///                     Ok(())
    ///                 }
    ///             }
    ///         });
    ///         // A deploy at 3.5 s, with a grace of 1 s: step 4 ends within it.
    ///         rt.sleep_until(rt.now().saturating_add(Duration::from_millis(3500))).await;
    ///         let report = pool.shutdown(Duration::from_secs(1)).await;
    ///         assert_eq!(report.put_back, vec![id]);
    ///         assert_eq!((report.stats.failed, report.stats.queue.dead), (0, 0));
    ///
    ///         // The next process resumes after step 4, on the same attempt.
    ///         let d = queue.receive().await.unwrap();
    ///         assert_eq!(d.attempt(), 1);
    ///         assert_eq!(d.progress().unwrap().as_bytes(), [4]);
    ///     }
    /// });
    /// ```
    pub fn stopping(&self) -> Stopping {
        Stopping::new(self.context.stop().clone())
    }

    /// Whether the pool has begun to stop (see [`stopping`](Self::stopping)): for a
    /// blocking handler to check between steps of long work.
    pub fn is_stopping(&self) -> bool {
        self.context.stop().is_asked()
    }

    /// The item's last checkpoint: what a handler recorded with
    /// [`checkpoint`](Self::checkpoint) on an earlier delivery (or this one), to resume from.
    /// `None` if nobody recorded one. As the handling began, then as this job's own
    /// [`checkpoint`](Self::checkpoint) last recorded it (not
    /// [`checkpoint_blocking`](Self::checkpoint_blocking)'s, which has no `&mut`). See
    /// [`crate::progress`].
    pub fn progress(&self) -> Option<Progress> {
        self.progress.clone()
    }

    /// The last checkpoint decoded (recorded with [`checkpoint_as`](Self::checkpoint_as)).
    #[cfg(feature = "serde")]
    pub fn progress_as<P: serde::de::DeserializeOwned>(
        &self,
    ) -> Option<Result<P, crate::CodecError>> {
        self.progress().map(|p| p.decode())
    }

    /// Records `progress` as the item's checkpoint, as
    /// [`Delivery::checkpoint`](crate::Delivery::checkpoint) does: `Ok` once durable,
    /// [`CheckpointError::Stale`] once the lease is no longer held (this handling is over,
    /// or its lease ran out and the item went to someone else), a typed store failure, or
    /// [`CheckpointError::TooLarge`].
    pub async fn checkpoint(
        &mut self,
        progress: impl Into<Vec<u8>>,
    ) -> Result<(), CheckpointError> {
        let progress = Progress::new(progress)?;
        self.record(progress.clone()).await?;
        self.progress = Some(progress);
        Ok(())
    }

    /// [`checkpoint`](Self::checkpoint) for a blocking handler
    /// ([`PoolBuilder::spawn_blocking`](crate::PoolBuilder::spawn_blocking)): blocks its
    /// thread until the store answers. Never call it from async code.
    pub fn checkpoint_blocking(&self, progress: impl Into<Vec<u8>>) -> Result<(), CheckpointError> {
        futures::executor::block_on(self.record(Progress::new(progress)?))
    }

    /// [`checkpoint`](Self::checkpoint) of `value` encoded with postcard (read it back with
    /// [`progress_as`](Self::progress_as)).
    #[cfg(feature = "serde")]
    pub async fn checkpoint_as<P: serde::Serialize + ?Sized>(
        &mut self,
        value: &P,
    ) -> Result<(), CheckpointError> {
        let progress = Progress::encode(value)?;
        self.record(progress.clone()).await?;
        self.progress = Some(progress);
        Ok(())
    }

    async fn record(&self, progress: Progress) -> Result<(), CheckpointError> {
        let lease =
            self.lease
                .ok_or(CheckpointError::Stale(leaseq_core::ReceiptError::Released(
                    self.id,
                )))?;
        self.context.checkpoint(lease, progress).await?;
        Ok(())
    }
}

impl<T> std::fmt::Debug for Job<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("id", &self.id)
            .field("attempt", &self.attempt)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}
