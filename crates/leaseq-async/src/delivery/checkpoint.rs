//! A delivery's checkpoints: the progress a holder records on its lease and the next
//! holder resumes from (see [`crate::progress`]).

use leaseq_core::ReceiptError;

use super::Delivery;
use crate::progress::{CheckpointError, Progress};
use crate::runtime::Runtime;
use crate::store::Store;

impl<T, R: Runtime, S: Store<T, Runtime = R>> Delivery<T, R, S> {
    /// The item's last checkpoint: what a holder recorded with
    /// [`checkpoint`](Self::checkpoint) on an earlier delivery (or this one), so that the
    /// work resumes from it. `None` if nobody recorded one (or once this delivery is
    /// settled). Asked of the store at each call (nothing is looked up on receive). See
    /// [`crate::progress`].
    pub fn progress(&self) -> Option<Progress> {
        self.stored_progress()
    }

    /// The last checkpoint decoded (recorded with [`checkpoint_as`](Self::checkpoint_as)).
    #[cfg(feature = "serde")]
    pub fn progress_as<P: serde::de::DeserializeOwned>(
        &self,
    ) -> Option<Result<P, crate::CodecError>> {
        self.progress().map(|p| p.decode())
    }

    /// Records `progress` (at most [`MAX_PROGRESS_BYTES`](crate::MAX_PROGRESS_BYTES)) as
    /// the item's checkpoint, handed to every later delivery of it until it is acked,
    /// cancelled or purged. `Ok` once it is durable (committed, for a durable store);
    /// [`CheckpointError::Stale`] when this lease is no longer held (nothing recorded: the
    /// new holder's checkpoint stands); [`CheckpointError::Store`] when the store failed
    /// (not recorded, or outcome unknown); [`CheckpointError::TooLarge`] past the limit.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leaseq_async::{Config, LeaseQueue, SimRuntime};
    ///
    /// let rt = SimRuntime::new();
    /// rt.block_on({
    ///     let rt = rt.clone();
    ///     async move {
    ///         let queue = LeaseQueue::with_runtime(rt, Config::new(Duration::from_secs(5))).unwrap();
    ///         queue.try_push("import.csv").unwrap();
    ///         let mut d = queue.receive().await.unwrap();
    ///         d.checkpoint(b"row 4000".to_vec()).await.unwrap();
    ///         drop(d); // the worker died: the item comes back with its checkpoint
    ///         let d = queue.receive().await.unwrap();
    ///         assert_eq!(d.progress().unwrap().as_bytes(), b"row 4000");
    ///     }
    /// });
    /// ```
    pub async fn checkpoint(
        &mut self,
        progress: impl Into<Vec<u8>>,
    ) -> Result<(), CheckpointError> {
        let progress = Progress::new(progress)?;
        self.record_checkpoint(progress).await
    }

    /// [`checkpoint`](Self::checkpoint) of `value` encoded with postcard (read it back with
    /// [`progress_as`](Self::progress_as)).
    #[cfg(feature = "serde")]
    pub async fn checkpoint_as<P: serde::Serialize + ?Sized>(
        &mut self,
        value: &P,
    ) -> Result<(), CheckpointError> {
        let progress = Progress::encode(value)?;
        self.record_checkpoint(progress).await
    }

    /// Records `progress` on this lease and, once it is durable, tells the store the ticket
    /// now carries it: the tail of both `checkpoint`s.
    async fn record_checkpoint(&mut self, progress: Progress) -> Result<(), CheckpointError> {
        self.checkpoint_future(progress.clone())?.await?;
        if let Some(ticket) = self.ticket.as_mut() {
            self.store.recorded(ticket, progress);
        }
        Ok(())
    }

    /// The key of this lease for checkpoints (none once settled, or if the store keeps
    /// none).
    #[inline]
    pub(crate) fn lease_key(&self) -> Option<crate::progress::LeaseKey> {
        self.ticket.as_ref().and_then(|t| self.store.lease_key(t))
    }

    /// The store's last checkpoint of this lease's item (none once settled).
    #[inline]
    pub(crate) fn stored_progress(&self) -> Option<Progress> {
        self.ticket.as_ref().and_then(|t| self.store.progress(t))
    }

    /// The store's checkpoint of this lease, started (refused at once once settled).
    pub(crate) fn checkpoint_future(
        &self,
        progress: Progress,
    ) -> Result<crate::store::Checkpointing, ReceiptError> {
        match self.lease_key() {
            Some(key) => Ok(self.store.checkpoint(key, progress)),
            None => Err(ReceiptError::Released(self.id)),
        }
    }
}
