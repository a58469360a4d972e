//! [`Closing`]: what [`LeaseQueue::close`] returns, to await for the store's last commit.

use std::future::{Future, IntoFuture};
use std::pin::Pin;

use crate::queue::LeaseQueue;
use crate::runtime::Runtime;
use crate::store::Store;
use crate::store_error::StoreError;

/// The queue is closed already (that happened in [`LeaseQueue::close`]); awaiting this
/// waits until every push and settle accepted before the close is durable, or the store
/// says it could not confirm that ([`StoreError`], outcome unknown). Dropping it without
/// awaiting changes nothing: the close stands, and the store commits in the background.
#[derive(Debug)]
pub struct Closing<'a, T, R: Runtime, S: Store<T, Runtime = R>> {
    pub(crate) queue: &'a LeaseQueue<T, R, S>,
}

impl<'a, T: 'a, R: Runtime, S: Store<T, Runtime = R>> IntoFuture for Closing<'a, T, R, S> {
    type Output = Result<(), StoreError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.queue.store().synced())
    }
}
