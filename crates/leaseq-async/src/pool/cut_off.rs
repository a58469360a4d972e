//! A worker's delivery while its item is handled, and what becomes of it when the worker is
//! cut off: at the end of a shutdown's grace, or at once when the pool is dropped.
//!
//! The pool stops a worker by aborting its task, which drops the handler's future and then
//! the delivery where they lie. A delivery dropped unsettled is handed back as "dropped",
//! its attempt counted: right for a crash (a panic unwinding, [`Pool::abort_worker`]), wrong
//! for a deploy, which would use up an item's attempts and dead-letter a long job after a few
//! restarts. So the worker holds its delivery in a [`Held`], whose `Drop` looks at the
//! pool's `cut` flag (set before the pool aborts anyone): set, the lease is put back
//! ([`Store::put_back`]): its attempt not counted, its checkpoint kept, the item visible at
//! once, and its id noted for the [`PoolReport`](crate::PoolReport).
//!
//! On the per-item path this costs one test of the ticket (settled, nothing to do), the
//! test the delivery's own `Drop` makes anyway.
//!
//! [`Pool::abort_worker`]: crate::Pool::abort_worker
//! [`Store::put_back`]: crate::Store::put_back

use std::sync::atomic::Ordering;

use crate::delivery::Delivery;
use crate::pool::PoolShared;
use crate::runtime::Runtime;
use crate::store::Store;

/// A worker's delivery while its item is handled (see the module docs): a borrow of it, so
/// that the delivery is not moved (a copy of some hundred bytes per item); declared after
/// it, this is dropped before it.
pub(crate) struct Held<'d, 'p, T, R: Runtime, S: Store<T, Runtime = R>> {
    pub(crate) delivery: &'d mut Delivery<T, R, S>,
    pool: &'p PoolShared<T>,
}

impl<'d, 'p, T, R: Runtime, S: Store<T, Runtime = R>> Held<'d, 'p, T, R, S> {
    pub(crate) fn new(delivery: &'d mut Delivery<T, R, S>, pool: &'p PoolShared<T>) -> Self {
        Held { delivery, pool }
    }

    /// Dropped unsettled: put back uncounted if the worker was cut off; otherwise left to
    /// the delivery's own `Drop` (handed back, counted).
    #[cold]
    #[inline(never)]
    fn unsettled(&mut self) {
        if self.pool.cut.load(Ordering::Acquire) {
            let id = self.delivery.id();
            if self.delivery.put_back_in_place() {
                self.pool
                    .put_back
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(id);
            }
        }
    }
}

impl<T, R: Runtime, S: Store<T, Runtime = R>> Drop for Held<'_, '_, T, R, S> {
    #[inline]
    fn drop(&mut self) {
        if self.delivery.is_unsettled() {
            self.unsettled();
        }
    }
}
