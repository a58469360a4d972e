//! Starting a pool whose workers dispatch by job kind.

use std::sync::Arc;

use crate::pool::{Handler, Pool, PoolBuilder};
use crate::router::{Envelope, Router};
use crate::runtime::Runtime;
use crate::store::Store;

impl<R: Runtime, S: Store<Envelope, Runtime = R>> PoolBuilder<Envelope, R, S> {
    /// Starts the workers with `router`: each item is handled by its kind's handler, under
    /// its kind's [`KindPolicy`](leaseq_core::KindPolicy) (feature `router`).
    ///
    /// The pool's item types (its per-type stats, latency histograms and advised timeouts)
    /// are the kinds, `"unknown"` for items with no route, replacing any
    /// [`item_type`](Self::item_type); the kinds' rules replace any
    /// [`kind_policy`](Self::kind_policy). A kind without a timeout of its own has the
    /// pool's [`item_timeout`](Self::item_timeout).
    ///
    /// No kind starves another, whatever the number of workers: a handler that panics
    /// costs its worker only the panic; one that hangs holds its worker until its kind's
    /// item timeout (else the pool's, by default the lease's end), when its future is
    /// dropped and the item goes back through its kind's rules (backoff, then the dead
    /// letters once its attempts are spent). So a bad kind takes at most its items'
    /// attempts × timeout of worker time, never a worker.
    pub fn spawn_router(self, router: Router) -> Pool<Envelope, R, S> {
        let router = Arc::new(router);
        let typed = router.clone();
        let mut builder = self.item_type(move |e| typed.type_of(e));
        if router.has_policies() {
            let ruled = router.clone();
            builder = builder.kind_policy(move |e| ruled.policy_of(e));
        } else {
            builder.clear_kind_policy();
        }
        let handler: Handler<Envelope> = Arc::new(move |job| router.dispatch(job));
        builder.start(handler)
    }
}
