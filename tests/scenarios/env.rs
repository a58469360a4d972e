//! What every scenario shares: the item type, the store kinds and inspection, [`Env`] (the
//! runtime, time unit and store of a test binary), the helpers and the run log.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::{select, Either};
use leaseq_async::{
    BoxFuture, Config, ConservationError, DeadLetter, FindingKind, Job, LeaseQueue, MemoryStore,
    MessageId, Reason, Runtime, Stats, Store, Timestamp,
};

/// An item of a scenario's queues, with its bytes for durable stores.
pub(crate) trait Item: Clone + Send + Sync + 'static {
    fn to_bytes(&self) -> Vec<u8>;
    fn from_bytes(bytes: &[u8]) -> Option<Self>;
}

impl Item for u32 {
    fn to_bytes(&self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
    fn from_bytes(bytes: &[u8]) -> Option<Self> {
        Some(u32::from_le_bytes(bytes.try_into().ok()?))
    }
}

/// Where a scenario's queues keep their items: [`Memory`] (the default) or, in the binaries
/// that bring one, a durable store.
pub(crate) trait StoreKind<R: Runtime>: Clone + Send + Sync + 'static {
    type Store<T: Item>: Store<T, Runtime = R> + InspectStore<T> + Send + Sync + 'static;
    /// Whether a receive may complete on its first poll once an item is there (a durable
    /// store first commits the delivery's attempt, so its receive waits for the writer).
    const RECEIVES_AT_ONCE: bool = true;
    /// Whether what a push or a dropped delivery does shows when the call returns: the
    /// item there for receivers (a waiting one woken), back in the queue or in the dead
    /// letters, and in the stats. A store shared by several processes shows it once one of
    /// its background tasks committed it, a moment later: the scenarios wait for that (up
    /// to their patience) before they check the same outcome.
    const VISIBLE_AT_ONCE: bool = true;
    /// A queue on `rt`, its heartbeat every `heartbeat_every` if given.
    fn queue<T: Item>(
        &self,
        rt: &R,
        config: Config,
        heartbeat_every: Option<Duration>,
    ) -> LeaseQueue<T, R, Self::Store<T>>;
}

/// The in-memory store.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Memory;

impl<R: Runtime> StoreKind<R> for Memory {
    type Store<T: Item> = MemoryStore<T, R>;
    fn queue<T: Item>(
        &self,
        rt: &R,
        config: Config,
        heartbeat_every: Option<Duration>,
    ) -> LeaseQueue<T, R> {
        let mut b = LeaseQueue::<T, R>::builder(config).runtime(rt.clone());
        if let Some(every) = heartbeat_every {
            b = b.heartbeat_every(every);
        }
        b.build().expect("valid config")
    }
}

/// What the checks of a scenario read from a queue beyond the `Store` seam, per store.
pub(crate) trait InspectStore<T: 'static>: Store<T> + Sized {
    /// The dead letters' facts (a store that keeps no `DeadLetter` values copies them out).
    fn dead_letter_list(q: &LeaseQueue<T, Self::Runtime, Self>) -> Vec<Dead>;
    fn invariants(q: &LeaseQueue<T, Self::Runtime, Self>) -> Result<(), ConservationError>;
    /// Leases kept alive by the heartbeat, where the store shows it.
    fn heartbeat_count(q: &LeaseQueue<T, Self::Runtime, Self>) -> Option<usize>;
    /// The stats with the gauges read now: `q.stats()` where that is exact (the memory
    /// core); a store shared by several processes counts its rows first (its `stats()` has
    /// them as of its last refresh).
    fn fresh_stats(q: &LeaseQueue<T, Self::Runtime, Self>) -> Stats {
        q.stats()
    }
}

impl<T: Clone + Send + 'static, R: Runtime> InspectStore<T> for MemoryStore<T, R> {
    fn dead_letter_list(q: &LeaseQueue<T, R>) -> Vec<Dead> {
        q.store().dead_letters().iter().map(Dead::of).collect()
    }
    fn invariants(q: &LeaseQueue<T, R>) -> Result<(), ConservationError> {
        q.check_invariants()
    }
    fn heartbeat_count(q: &LeaseQueue<T, R>) -> Option<usize> {
        Some(q.heartbeats())
    }
}

/// [`InspectStore`] as methods of the queue.
pub(crate) trait Inspect {
    fn dead_letter_list(&self) -> Vec<Dead>;
    fn invariants(&self) -> Result<(), ConservationError>;
    fn heartbeat_count(&self) -> Option<usize>;
    fn fresh_stats(&self) -> Stats;
}

impl<T: 'static, R: Runtime, S: InspectStore<T> + Store<T, Runtime = R>> Inspect
    for LeaseQueue<T, R, S>
{
    fn dead_letter_list(&self) -> Vec<Dead> {
        S::dead_letter_list(self)
    }
    fn invariants(&self) -> Result<(), ConservationError> {
        S::invariants(self)
    }
    fn heartbeat_count(&self) -> Option<usize> {
        S::heartbeat_count(self)
    }
    fn fresh_stats(&self) -> Stats {
        S::fresh_stats(self)
    }
}

/// What a scenario runs with: the runtime, the time unit, whether time is virtual, and the
/// store its queues are built on.
#[derive(Clone, Debug)]
pub(crate) struct Env<R, K = Memory> {
    pub(crate) rt: R,
    /// The time unit every duration of a scenario is a multiple of.
    pub(crate) u: Duration,
    /// Virtual time: exact instants may be asserted.
    pub(crate) virtual_time: bool,
    /// The store the queues are built on.
    pub(crate) store: K,
}

impl<R: Runtime> Env<R> {
    pub(crate) fn new(rt: R, u: Duration, virtual_time: bool) -> Self {
        Env {
            rt,
            u,
            virtual_time,
            store: Memory,
        }
    }
}

impl<R: Runtime, K: StoreKind<R>> Env<R, K> {
    /// The same runtime and unit, the queues on `store`.
    pub(crate) fn with_store<K2: StoreKind<R>>(self, store: K2) -> Env<R, K2> {
        Env {
            rt: self.rt,
            u: self.u,
            virtual_time: self.virtual_time,
            store,
        }
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.rt.now()
    }

    /// The overall limit on any one wait of a scenario: generous, so that a slow machine
    /// does not fail a run, and a hang fails instead of blocking the test binary.
    pub(crate) fn patience(&self) -> Duration {
        100 * self.u
    }

    pub(crate) fn queue<T: Item>(&self, config: Config) -> LeaseQueue<T, R, K::Store<T>> {
        self.store.queue(&self.rt, config, None)
    }

    /// A queue whose heartbeat beats every `every`.
    pub(crate) fn queue_with_heartbeat<T: Item>(
        &self,
        config: Config,
        every: Duration,
    ) -> LeaseQueue<T, R, K::Store<T>> {
        self.store.queue(&self.rt, config, Some(every))
    }

    pub(crate) fn spawn(&self, future: impl Future<Output = ()> + Send + 'static) -> R::Task {
        self.rt.spawn(Box::pin(future))
    }

    /// `fut`, or a panic naming `what` if it takes longer than `limit`.
    pub(crate) async fn within<F: Future>(&self, limit: Duration, what: &str, fut: F) -> F::Output {
        let deadline = pin!(sleep(&self.rt, limit));
        match select(pin!(fut), deadline).await {
            Either::Left((out, _)) => out,
            Either::Right(_) => panic!("gave up after {limit:?} waiting for {what}"),
        }
    }

    /// Waits until `cond` holds, looking every `u / 20`; panics after `limit`.
    pub(crate) async fn until(&self, limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
        let give_up = self.now().saturating_add(limit);
        while !cond() {
            assert!(
                self.now() < give_up,
                "gave up after {limit:?} waiting for {what}"
            );
            sleep(&self.rt, self.u / 20).await;
        }
    }

    /// The queue's stats, their gauges read now ([`Inspect::fresh_stats`]), once `settled`
    /// holds of them: at once where what a push or a drop does shows when it returns
    /// (`VISIBLE_AT_ONCE`), else after the store committed it (waiting up to the patience).
    /// The caller then checks the exact values.
    pub(crate) async fn stats_once<Q: Inspect>(
        &self,
        q: &Q,
        what: &str,
        settled: impl Fn(&Stats) -> bool,
    ) -> Stats {
        if !K::VISIBLE_AT_ONCE {
            self.until(self.patience(), what, || settled(&q.fresh_stats()))
                .await;
        }
        q.fresh_stats()
    }

    /// Asserts `actual == expected` on virtual time (real time is never exact).
    #[track_caller]
    pub(crate) fn exactly(&self, actual: Timestamp, expected: Timestamp, what: &str) {
        if self.virtual_time {
            assert_eq!(actual, expected, "{what}");
        }
    }
}

/// Sleeps `d` on `rt`'s clock.
pub(crate) fn sleep<R: Runtime>(rt: &R, d: Duration) -> BoxFuture {
    Box::pin(rt.sleep_until(rt.now().saturating_add(d)))
}

/// Blocks this thread (in real time) until `cond` holds: for what happens on blocking
/// threads, which live in real time on every runtime and need no task to run.
#[track_caller]
pub(crate) fn block_until(what: &str, mut cond: impl FnMut() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < give_up, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

pub(crate) use leaseq_bench_kit::rng::Rng;

/// One handler run: which attempt, and when it started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) attempt: u32,
    pub(crate) at: Timestamp,
}

/// Handler runs per message id, and the order they started in.
#[derive(Clone, Debug, Default)]
pub(crate) struct Runs(Arc<Mutex<RunLog>>);

#[derive(Debug, Default)]
pub(crate) struct RunLog {
    per_id: BTreeMap<MessageId, Vec<Run>>,
    order: Vec<MessageId>,
}

impl Runs {
    pub(crate) fn record<T>(&self, job: &Job<T>, at: Timestamp) {
        let mut log = self.0.lock().unwrap();
        log.per_id.entry(job.id).or_default().push(Run {
            attempt: job.attempt,
            at,
        });
        log.order.push(job.id);
    }

    pub(crate) fn of(&self, id: MessageId) -> Vec<Run> {
        self.0
            .lock()
            .unwrap()
            .per_id
            .get(&id)
            .cloned()
            .unwrap_or_default()
    }

    pub(crate) fn attempts(&self, id: MessageId) -> Vec<u32> {
        self.of(id).iter().map(|r| r.attempt).collect()
    }

    pub(crate) fn total(&self) -> usize {
        self.0.lock().unwrap().order.len()
    }

    pub(crate) fn order(&self) -> Vec<MessageId> {
        self.0.lock().unwrap().order.clone()
    }
}

/// A dead letter's facts, copied out from under the queue lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Dead {
    pub(crate) id: MessageId,
    pub(crate) attempts: u32,
    pub(crate) reason: Reason,
    pub(crate) last_error: Option<String>,
    pub(crate) at: Timestamp,
}

impl Dead {
    pub(crate) fn of<T>(d: &DeadLetter<T>) -> Dead {
        Dead {
            id: d.id,
            attempts: d.attempts,
            reason: d.reason,
            last_error: d.last_error.clone(),
            at: d.at,
        }
    }
}

pub(crate) fn dead_letters<Q: Inspect>(q: &Q) -> Vec<Dead> {
    q.dead_letter_list()
}

/// Conservation and the core's own recount of every gauge.
#[track_caller]
pub(crate) fn assert_conserved<Q: Inspect>(q: &Q) {
    if let Err(e) = q.invariants() {
        panic!("{e}");
    }
}

pub(crate) fn kinds(findings: &[leaseq_async::Finding]) -> Vec<FindingKind> {
    findings.iter().map(|f| f.kind).collect()
}
