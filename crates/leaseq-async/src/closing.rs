//! [`Closing`]: what [`LeaseQueue::close`](crate::LeaseQueue::close) returns, to await for
//! the store's last commit.

use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;

use crate::runtime::Runtime;
use crate::store::Store;
use crate::store_error::StoreError;

/// The queue is closed already (that happened in
/// [`LeaseQueue::close`](crate::LeaseQueue::close)); awaiting this
/// waits until every push and settle accepted before the close is durable, or the store
/// says it could not confirm that ([`StoreError`], outcome unknown). Dropping it without
/// awaiting changes nothing: the close stands, and the store commits in the background.
pub struct Closing<'a, T, R: Runtime, S: Store<T, Runtime = R>> {
    store: &'a S,
    _items: PhantomData<fn() -> T>,
}

impl<'a, T, R: Runtime, S: Store<T, Runtime = R>> Closing<'a, T, R, S> {
    /// Waits on `store`, closed already.
    pub(crate) fn new(store: &'a S) -> Self {
        Closing {
            store,
            _items: PhantomData,
        }
    }
}

impl<'a, T: 'a, R: Runtime, S: Store<T, Runtime = R>> IntoFuture for Closing<'a, T, R, S> {
    type Output = Result<(), StoreError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.store.synced())
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> std::fmt::Debug for Closing<'_, T, R, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Closing")
            .field("queue", &self.store.name())
            .finish_non_exhaustive()
    }
}
