//! The pools of the dashboard's own process ([`Dashboard::with_pool`](crate::Dashboard::with_pool)):
//! each a [`PoolWatch`] behind a function that takes a look, so that pools over any item
//! type, runtime and store sit in one list.

use std::fmt;
use std::sync::Arc;

use leaseq_async::{PoolStats, PoolWatch, Running, Runtime, Store, StuckWorker};

/// One look at a pool: what the workers page shows.
#[derive(Debug, Clone)]
pub(crate) struct PoolLook {
    /// The queue's name.
    pub(crate) queue: &'static str,
    /// Workers the pool started with, and running now.
    pub(crate) workers: usize,
    pub(crate) live: usize,
    /// Whether it has a watchdog (without one, the items held are not known).
    pub(crate) watched: bool,
    pub(crate) stats: PoolStats,
    pub(crate) running: Vec<Running>,
    pub(crate) stuck: Vec<StuckWorker>,
}

type Look = Arc<dyn Fn() -> PoolLook + Send + Sync>;

/// The pools given, by the name they were given under, in that order.
#[derive(Clone, Default)]
pub(crate) struct Pools(Vec<(String, Look)>);

impl Pools {
    /// Adds `watch` under `name`.
    pub(crate) fn add<T, R, S>(&mut self, name: String, watch: PoolWatch<T, R, S>)
    where
        T: Clone + Send + Sync + 'static,
        R: Runtime,
        S: Store<T, Runtime = R>,
        PoolWatch<T, R, S>: Send + Sync + 'static,
    {
        self.0.push((
            name,
            Arc::new(move || PoolLook {
                queue: watch.queue().name(),
                workers: watch.workers(),
                live: watch.live_workers(),
                watched: watch.watched(),
                stats: watch.stats(),
                running: watch.running(),
                stuck: watch.stuck_workers(),
            }),
        ));
    }

    /// Whether no pool was given (the dashboard is not mounted in a pool's process).
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A look at each pool, with its name.
    pub(crate) fn looks(&self) -> Vec<(&str, PoolLook)> {
        self.0
            .iter()
            .map(|(n, look)| (n.as_str(), look()))
            .collect()
    }
}

impl fmt::Debug for Pools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(n, _)| n))
            .finish()
    }
}
