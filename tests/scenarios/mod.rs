//! The cross-runtime scenarios of issue 3, written once over [`Runtime`] and a time unit.
//!
//! Each scenario is an `async fn(Env<R>)`; the test binaries (`tokio_paused.rs`,
//! `tokio_multi.rs`, `smol.rs`, `sim.rs`) run them on their runtime with
//! [`scenario_tests!`]. Every duration is a multiple of the unit `env.u`.
//!
//! On virtual time (`env.virtual_time`: tokio's paused clock, `SimRuntime`) the scenarios also
//! assert exact instants. On real time they assert only outcomes and counts, with enough
//! slack between competing deadlines (several units) to stay robust on a loaded machine,
//! and they wait on conditions (`within`, `until`) under a generous overall limit.
// Each binary runs a subset (tokio's paused clock skips the blocking scenario).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use futures::future::{select, Either};
use futures::FutureExt;
use leaseq_async::{
    BoxFuture, Config, ConservationError, DeadLetter, FindingKind, ItemTimeout, Job, LeaseQueue,
    MemoryStore, MessageId, Pool, Reason, Runtime, Store, Timestamp, Watchdog,
};

/// Generates one `#[test]` per scenario, each run through `$run` (the binary's
/// `fn run(scenario)`, which builds the runtime and the [`Env`]).
macro_rules! scenario_tests {
    ($run:ident: $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                $run(scenarios::$name);
            }
        )*
    };
}
pub(crate) use scenario_tests;

/// One `#[test]` per scenario that runs on every runtime, plus any listed after the runner
/// (the blocking scenario, for runtimes whose clock lets blocking work overrun a timeout).
macro_rules! all_scenario_tests {
    ($run:ident $(, $extra:ident)* $(,)?) => {
        scenarios::scenario_tests!($run:
            hung_handler_times_out,
            slow_handler_with_heartbeat_runs_once,
            slow_handler_without_heartbeat_acks_late,
            dropped_delivery_comes_back_at_once,
            panicking_handler_is_caught,
            aborted_worker_hands_its_item_back,
            watchdog_reports_stuck_worker,
            shutdown_short_grace_hands_items_back,
            shutdown_long_grace_lets_items_finish,
            cancelled_receive_loses_nothing,
            $($extra,)*
        );
    };
}
pub(crate) use all_scenario_tests;

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
pub(crate) trait InspectStore<T>: Store<T> + Sized {
    fn dead_letter_list(q: &LeaseQueue<T, Self::Runtime, Self>) -> Vec<DeadLetter<T>>;
    fn invariants(q: &LeaseQueue<T, Self::Runtime, Self>) -> Result<(), ConservationError>;
    /// Leases kept alive by the heartbeat, where the store shows it.
    fn heartbeat_count(q: &LeaseQueue<T, Self::Runtime, Self>) -> Option<usize>;
}

impl<T: Clone + Send + 'static, R: Runtime> InspectStore<T> for MemoryStore<T, R> {
    fn dead_letter_list(q: &LeaseQueue<T, R>) -> Vec<DeadLetter<T>> {
        q.dead_letters()
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
    type Item;
    fn dead_letter_list(&self) -> Vec<DeadLetter<Self::Item>>;
    fn invariants(&self) -> Result<(), ConservationError>;
    fn heartbeat_count(&self) -> Option<usize>;
}

impl<T, R: Runtime, S: InspectStore<T> + Store<T, Runtime = R>> Inspect for LeaseQueue<T, R, S> {
    type Item = T;
    fn dead_letter_list(&self) -> Vec<DeadLetter<T>> {
        S::dead_letter_list(self)
    }
    fn invariants(&self) -> Result<(), ConservationError> {
        S::invariants(self)
    }
    fn heartbeat_count(&self) -> Option<usize> {
        S::heartbeat_count(self)
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

pub(crate) use leaseq_suite::rng::Rng;

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

pub(crate) fn dead_letters<Q: Inspect>(q: &Q) -> Vec<Dead> {
    q.dead_letter_list()
        .iter()
        .map(|d| Dead {
            id: d.id,
            attempts: d.attempts,
            reason: d.reason,
            last_error: d.last_error.clone(),
            at: d.at,
        })
        .collect()
}

/// Conservation and the core's own recount of every gauge.
#[track_caller]
pub(crate) fn assert_conserved<Q: Inspect>(q: &Q) {
    if let Err(e) = q.invariants() {
        panic!("{e}");
    }
}

fn kinds(findings: &[leaseq_async::Finding]) -> Vec<FindingKind> {
    findings.iter().map(|f| f.kind).collect()
}

// ----- 1. hung handler ----------------------------------------------------------------------

/// A handler that never finishes, under an item timeout: the item is handed back at each
/// time-out (never waiting for its lease), redelivered, and dead-lettered after its last
/// attempt with reason `TimedOut`, its attempt count and the "timed out after ..." error.
/// The other items are not held up, and the pool counts the time-outs.
pub(crate) async fn hung_handler_times_out<R: Runtime, K: StoreKind<R>>(env: Env<R, K>) {
    let u = env.u;
    let limit = 2 * u;
    let q = env.queue::<u32>(Config::new(50 * u).with_max_attempts(3));
    let hung = q.try_push(0).unwrap();
    for n in 1..=4 {
        q.try_push(n).unwrap();
    }
    let runs = Runs::default();
    let start = env.now();
    let pool = Pool::builder(q.clone())
        .workers(2)
        .item_timeout(ItemTimeout::Fixed(limit))
        .item_type(|n: &u32| if *n == 0 { "hung" } else { "quick" })
        .spawn({
            let (runs, rt) = (runs.clone(), env.rt.clone());
            move |job: Job<u32>| {
                runs.record(&job, rt.now());
                let pause = sleep(&rt, u / 10);
                async move {
                    if job.item == 0 {
                        std::future::pending::<()>().await;
                    }
                    pause.await;
                    Ok(())
                }
            }
        });
    env.within(env.patience(), "the queue to empty", q.wait_empty())
        .await;

    // Three attempts, each handed back at its time-out, then the dead letters.
    assert_eq!(runs.attempts(hung), [1, 2, 3]);
    let at: Vec<Timestamp> = runs.of(hung).iter().map(|r| r.at).collect();
    if env.virtual_time {
        assert_eq!(
            at,
            [
                start,
                start.saturating_add(limit),
                start.saturating_add(2 * limit)
            ]
        );
    }
    let dead = dead_letters(&q);
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].id, hung);
    assert_eq!(dead[0].reason, Reason::TimedOut);
    assert_eq!(dead[0].attempts, 3);
    assert_eq!(
        dead[0].last_error.as_deref(),
        Some(format!("timed out after {limit:?}").as_str())
    );
    env.exactly(dead[0].at, start.saturating_add(3 * limit), "dead at");
    env.exactly(env.now(), start.saturating_add(3 * limit), "empty at");

    let s = pool.stats();
    assert_eq!(s.timed_out, 3, "{s:#?}");
    assert_eq!((s.ok, s.failed, s.panicked, s.permanent), (4, 0, 0, 0));
    assert_eq!(s.stale_settles, 0);
    assert_eq!(s.handled(), 7);
    let hung_type = s.types.iter().find(|(t, _)| *t == "hung").expect("type").1;
    assert_eq!((hung_type.handled, hung_type.timed_out), (3, 3));
    assert_eq!(hung_type.timeout_ppm, 1_000_000);
    let quick_type = s.types.iter().find(|(t, _)| *t == "quick").expect("type").1;
    assert_eq!((quick_type.ok, quick_type.timed_out), (4, 0));
    // Handed back by the time-out, not by the lease: no lease ever expired.
    let qs = s.queue;
    assert_eq!(qs.lease_expired, 0, "{qs:#?}");
    assert_eq!((qs.nacks, qs.delivered, qs.redelivered), (3, 7, 2));
    assert_eq!((qs.acked, qs.dead_lettered, qs.in_flight), (4, 1, 0));

    let report = pool.shutdown(u).await;
    assert_eq!(report.handed_back, 0);
    assert_eq!(report.stats.timed_out, 3);
    assert!(kinds(&report.diagnosis).contains(&FindingKind::ItemTimeoutTooShort));
    assert_conserved(&q);
}

// ----- 2. slow handler with heartbeat -------------------------------------------------------

/// A handler slower than the visibility timeout, with the heartbeat on: the leases are kept
/// alive, so no item runs twice (runs counted per message id, with idle workers ready to
/// take any redelivery) and no ack is late.
pub(crate) async fn slow_handler_with_heartbeat_runs_once<R: Runtime, K: StoreKind<R>>(
    env: Env<R, K>,
) {
    let u = env.u;
    let work = 5 * u;
    // Visibility 2u, a beat every u/4: a beat may come 1.75u late before a lease is lost.
    let q = env.queue_with_heartbeat::<u32>(Config::new(2 * u), u / 4);
    let ids: Vec<MessageId> = (0..3).map(|n| q.try_push(n).unwrap()).collect();
    let runs = Runs::default();
    let start = env.now();
    let pool = Pool::builder(q.clone()).workers(4).heartbeat(true).spawn({
        let (runs, rt) = (runs.clone(), env.rt.clone());
        move |job: Job<u32>| {
            runs.record(&job, rt.now());
            let slow = sleep(&rt, work);
            async move {
                slow.await;
                Ok(())
            }
        }
    });
    env.within(env.patience(), "the queue to empty", q.wait_empty())
        .await;
    env.exactly(env.now(), start.saturating_add(work), "empty at");

    for id in &ids {
        assert_eq!(runs.attempts(*id), [1], "item {id} ran more than once");
    }
    assert_eq!(runs.total(), 3);
    let s = pool.stats();
    assert_eq!((s.ok, s.stale_settles, s.timed_out), (3, 0, 0), "{s:#?}");
    let qs = s.queue;
    assert_eq!(qs.late_acks_stale, 0, "{qs:#?}");
    assert_eq!(qs.late_acks_unclaimed, 0);
    assert_eq!(qs.redelivered, 0);
    assert_eq!(qs.lease_expired, 0);
    assert_eq!((qs.delivered, qs.acked), (3, 3));
    // The heartbeat did the work: every item was extended, about every u/4.
    assert!(qs.extends > 0, "{qs:#?}");
    if env.virtual_time {
        // 20 beats fit in 5u; the last one coincides with the ack and may come first.
        assert!((3 * 19..=3 * 20).contains(&qs.extends), "{qs:#?}");
    }
    if let Some(beats) = q.heartbeat_count() {
        assert_eq!(beats, 0, "settled deliveries leave the heartbeat");
    }

    let report = pool.shutdown(u).await;
    assert_eq!(report.handed_back, 0);
    assert_conserved(&q);
}

// ----- 3. slow handler without heartbeat ----------------------------------------------------

/// The same slow first run without the heartbeat: its lease runs out, an idle worker runs the
/// item again and acks it, and the first run's ack comes late and is refused. Every extra run
/// is accounted for: `late_acks_stale` == the pool's `stale_settles` == runs - items.
pub(crate) async fn slow_handler_without_heartbeat_acks_late<R: Runtime, K: StoreKind<R>>(
    env: Env<R, K>,
) {
    let u = env.u;
    let visibility = 2 * u;
    let first_run = 6 * u;
    let q = env.queue::<u32>(Config::new(visibility));
    let ids: Vec<MessageId> = (0..3).map(|n| q.try_push(n).unwrap()).collect();
    let runs = Runs::default();
    let start = env.now();
    let pool = Pool::builder(q.clone()).workers(6).spawn({
        let (runs, rt) = (runs.clone(), env.rt.clone());
        move |job: Job<u32>| {
            runs.record(&job, rt.now());
            // Only the first run is slow; the second acks at once, 4u before the first ends.
            let slow = (job.attempt == 1).then(|| sleep(&rt, first_run));
            async move {
                if let Some(slow) = slow {
                    slow.await;
                }
                Ok(())
            }
        }
    });
    // The second runs empty the queue at 2u; the first runs finish (and ack, too late) at 6u.
    env.within(env.patience(), "the queue to empty", q.wait_empty())
        .await;
    env.exactly(env.now(), start.saturating_add(visibility), "empty at");
    let report = pool.shutdown(20 * u).await;
    assert_eq!(
        report.handed_back, 0,
        "the first runs finish within the grace"
    );
    env.exactly(env.now(), start.saturating_add(first_run), "shut down at");

    for id in &ids {
        let r = runs.of(*id);
        assert_eq!(r.iter().map(|r| r.attempt).collect::<Vec<_>>(), [1, 2]);
        env.exactly(r[1].at, start.saturating_add(visibility), "rerun at");
    }
    let extra_runs = (runs.total() - ids.len()) as u64;
    assert_eq!(extra_runs, 3);
    let s = report.stats;
    let qs = s.queue;
    assert_eq!(qs.late_acks_stale, extra_runs, "{s:#?}");
    assert_eq!(s.stale_settles, extra_runs);
    assert_eq!(qs.late_acks_unclaimed, 0);
    assert_eq!((qs.lease_expired, qs.redelivered, qs.delivered), (3, 3, 6));
    assert_eq!((qs.acked, qs.dead_lettered, qs.nacks), (3, 0, 0));
    assert_eq!(s.ok, 6, "both runs of each item finished");
    assert!(kinds(&report.diagnosis).contains(&FindingKind::VisibilityTooShort));
    assert_conserved(&q);
}

// ----- 4. dropped delivery ------------------------------------------------------------------

/// A delivery dropped unsettled is back at once (no time passes: the next receive needs no
/// await), as attempt 2, counted as a nack; dropped on its last attempt it is dead-lettered
/// with `Reason::Dropped`. A receiver already waiting is woken by the drop.
pub(crate) async fn dropped_delivery_comes_back_at_once<R: Runtime, K: StoreKind<R>>(
    env: Env<R, K>,
) {
    let u = env.u;
    let q = env.queue::<u32>(Config::new(50 * u).with_max_attempts(2));
    let id = q.try_push(7).unwrap();
    let first = env
        .within(env.patience(), "a delivery", q.receive())
        .await
        .expect("queue open");
    assert_eq!((first.id(), first.attempt()), (id, 1));
    let t = env.now();
    drop(first);
    // No await since the drop: the item must be receivable right now.
    let mut again = q.try_receive_batch(1);
    assert_eq!(again.len(), 1, "the dropped item is not back at once");
    let again = again.pop().unwrap();
    assert_eq!((again.id(), again.attempt(), *again.item()), (id, 2, 7));
    env.exactly(env.now(), t, "no time passes");
    let s = q.stats();
    assert_eq!(
        (s.nacks, s.lease_expired, s.redelivered),
        (1, 0, 1),
        "{s:#?}"
    );

    // Dropped on its last attempt: to the dead letters.
    drop(again);
    let dead = dead_letters(&q);
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(
        (dead[0].id, dead[0].reason, dead[0].attempts),
        (id, Reason::Dropped, 2)
    );
    assert_eq!(dead[0].last_error, None);
    let s = q.stats();
    assert_eq!(
        (s.nacks, s.dead_lettered, s.in_flight, s.ready),
        (2, 1, 0, 0)
    );

    // A receiver already waiting gets the item when its holder drops it, not at its lease.
    let (tx, rx) = futures::channel::oneshot::channel();
    let holder = env.spawn({
        let (q, rt) = (q.clone(), env.rt.clone());
        async move {
            let d = q.receive().await.expect("queue open");
            let _ = tx.send((d.id(), d.attempt()));
            sleep(&rt, u).await;
            drop(d);
        }
    });
    let id2 = q.try_push(8).unwrap();
    let held = env
        .within(env.patience(), "the holder", rx)
        .await
        .expect("holder ran");
    assert_eq!(held, (id2, 1));
    let t = env.now();
    let d = env
        .within(env.patience(), "the dropped item", q.receive())
        .await
        .expect("queue open");
    assert_eq!((d.id(), d.attempt()), (id2, 2));
    env.exactly(env.now(), t.saturating_add(u), "received at the drop");
    d.ack().await.unwrap();
    env.within(env.patience(), "the holder to end", holder)
        .await;
    let s = q.stats();
    assert_eq!((s.nacks, s.lease_expired, s.acked), (3, 0, 1), "{s:#?}");
    assert_conserved(&q);
}

// ----- 5. panicking handler -----------------------------------------------------------------

/// A handler that panics (inside its future, or before returning one): the panic is caught,
/// recorded with its own reason (`Reason::Panicked`) and its message as the item's last
/// error, and the one worker goes on with the next items.
pub(crate) async fn panicking_handler_is_caught<R: Runtime, K: StoreKind<R>>(env: Env<R, K>) {
    let u = env.u;
    let q = env.queue::<u32>(Config::new(50 * u).with_max_attempts(2));
    let ids: Vec<MessageId> = (0..6).map(|n| q.try_push(n).unwrap()).collect();
    let runs = Runs::default();
    let pool = Pool::builder(q.clone()).workers(1).spawn({
        let (runs, rt) = (runs.clone(), env.rt.clone());
        move |job: Job<u32>| {
            runs.record(&job, rt.now());
            let n = job.item;
            if n == 4 {
                panic!("sync boom {n}");
            }
            let pause = sleep(&rt, u / 10);
            async move {
                pause.await;
                if n == 2 {
                    panic!("boom {n}");
                }
                Ok(())
            }
        }
    });
    env.within(env.patience(), "the queue to empty", q.wait_empty())
        .await;

    // One worker, FIFO, no backoff: the panicking items go to the back and are retried once.
    let order: Vec<u64> = runs.order().iter().map(|id| id.get()).collect();
    assert_eq!(order, [0, 1, 2, 3, 4, 5, 2, 4]);
    let mut dead = dead_letters(&q);
    dead.sort_by_key(|d| d.id);
    assert_eq!(dead.len(), 2, "{dead:?}");
    for (d, (id, error)) in dead
        .iter()
        .zip([(ids[2], "boom 2"), (ids[4], "sync boom 4")])
    {
        assert_eq!((d.id, d.reason, d.attempts), (id, Reason::Panicked, 2));
        assert_eq!(d.last_error.as_deref(), Some(error));
    }
    let s = pool.stats();
    assert_eq!(
        (s.panicked, s.ok, s.failed, s.timed_out),
        (4, 4, 0, 0),
        "{s:#?}"
    );
    let item = s.types.iter().find(|(t, _)| *t == "item").expect("type").1;
    assert_eq!((item.panicked, item.ok), (4, 4));
    assert_eq!(
        (s.queue.acked, s.queue.dead_lettered, s.queue.nacks),
        (4, 2, 4)
    );

    let report = pool.shutdown(u).await;
    assert_eq!(report.handed_back, 0, "the worker is alive and idle");
    assert_conserved(&q);
}

// ----- 6. aborted worker --------------------------------------------------------------------

/// `pool.abort_worker(i)` while worker `i` holds an item: the item comes back to the queue at
/// once (a drop, not a lease expiry), another worker runs it, and the other workers go on
/// with new items. The watchdog names the worker holding the item.
pub(crate) async fn aborted_worker_hands_its_item_back<R: Runtime, K: StoreKind<R>>(
    env: Env<R, K>,
) {
    let u = env.u;
    let q = env.queue::<u32>(Config::new(50 * u));
    let held = q.try_push(0).unwrap();
    let runs = Runs::default();
    let pool = Pool::builder(q.clone())
        .workers(3)
        .watchdog(Watchdog::new(u / 2, u))
        .spawn({
            let (runs, rt) = (runs.clone(), env.rt.clone());
            move |job: Job<u32>| {
                runs.record(&job, rt.now());
                let hang = job.item == 0 && job.attempt == 1;
                let pause = sleep(&rt, u / 10);
                async move {
                    if hang {
                        std::future::pending::<()>().await;
                    }
                    pause.await;
                    Ok(())
                }
            }
        });
    env.until(env.patience(), "the watchdog to name the holder", || {
        !pool.stuck_workers().is_empty()
    })
    .await;
    let stuck = pool.stuck_workers();
    assert_eq!(stuck.len(), 1, "{stuck:?}");
    assert_eq!(stuck[0].holding.id, held);
    let t = env.now();
    pool.abort_worker(stuck[0].worker);
    env.within(env.patience(), "the queue to empty", q.wait_empty())
        .await;
    let r = runs.of(held);
    assert_eq!(r.iter().map(|r| r.attempt).collect::<Vec<_>>(), [1, 2]);
    env.exactly(r[1].at, t, "rerun at the abort");
    env.exactly(env.now(), t.saturating_add(u / 10), "empty at");

    // The other workers go on with new items.
    for n in 1..=9 {
        q.try_push(n).unwrap();
    }
    env.within(env.patience(), "the queue to empty", q.wait_empty())
        .await;
    assert_eq!(runs.total(), 11);
    let s = pool.stats();
    assert_eq!(s.ok, 10, "{s:#?}");
    let qs = s.queue;
    assert_eq!(
        (qs.nacks, qs.lease_expired, qs.redelivered),
        (1, 0, 1),
        "{qs:#?}"
    );
    assert_eq!((qs.acked, qs.dead_lettered, qs.in_flight), (10, 0, 0));

    let report = pool.shutdown(u).await;
    assert_eq!(report.handed_back, 0, "the aborted worker counts as ended");
    assert_conserved(&q);
}

// ----- 7. blocking handler ------------------------------------------------------------------

/// A blocking handler (on the runtime's blocking threads) that sleeps past its item timeout
/// until the test opens a gate: the item is handed back at each time-out while the thread
/// runs on; each such thread is counted as an overrun; with the bound of 2 reached, the
/// third attempt waits (and times out) without starting a thread; `blocking_overruns_running`
/// returns to 0 once the threads end.
///
/// Not run on tokio's paused clock: it does not auto-advance while `spawn_blocking` work
/// runs, so the item timeout would never fire there.
pub(crate) async fn blocking_handler_overruns_are_counted<R: Runtime, K: StoreKind<R>>(
    env: Env<R, K>,
) {
    let u = env.u;
    let q = env.queue::<u32>(Config::new(50 * u).with_max_attempts(3));
    let id = q.try_push(0).unwrap();
    let gate = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicU32::new(0));
    let start = env.now();
    let pool = Pool::builder(q.clone())
        .workers(2)
        .item_timeout(ItemTimeout::Fixed(u))
        .max_blocking_overruns(2)
        .spawn_blocking({
            let (gate, calls) = (gate.clone(), calls.clone());
            move |job: &Job<u32>| {
                // Blocking handlers get the same context as async ones (item 0 is the
                // first two calls: attempts 1 and 2).
                let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
                assert!(job.time_left() <= u);
                if job.item == 0 {
                    assert_eq!(job.attempt, call);
                    let give_up = Instant::now() + Duration::from_secs(20);
                    while !gate.load(Ordering::SeqCst) && Instant::now() < give_up {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                Ok(())
            }
        });
    env.within(env.patience(), "the queue to empty", q.wait_empty())
        .await;
    // Attempts 1 and 2 each ran a thread that outlived its time-out; attempt 3 found the bound
    // reached and timed out waiting; then the item was dead-lettered, each step at once.
    env.exactly(env.now(), start.saturating_add(3 * u), "empty at");
    let s = pool.stats();
    assert_eq!((s.timed_out, s.ok), (3, 0), "{s:#?}");
    assert_eq!(s.blocking_overruns, 2);
    assert_eq!(s.blocking_overruns_running, 2, "the gate is still closed");
    let qs = s.queue;
    assert_eq!(
        (qs.lease_expired, qs.nacks, qs.redelivered),
        (0, 3, 2),
        "{qs:#?}"
    );
    let dead = dead_letters(&q);
    assert_eq!(dead.len(), 1);
    assert_eq!(
        (dead[0].id, dead[0].reason, dead[0].attempts),
        (id, Reason::TimedOut, 3)
    );
    assert_eq!(
        dead[0].last_error.as_deref(),
        Some(format!("timed out after {u:?}").as_str())
    );

    // Let the threads end: the running count goes back to zero, the total stays.
    gate.store(true, Ordering::SeqCst);
    block_until("the blocking threads to end", || {
        pool.stats().blocking_overruns_running == 0
    });
    assert_eq!(pool.stats().blocking_overruns, 2);
    // (Counted only now: on virtual time the clock may run ahead of the threads' start.)
    assert_eq!(calls.load(Ordering::SeqCst), 2, "two threads started");

    // With the overruns over, the workers start blocking work again. (Only on real time:
    // SimRuntime's clock does not wait for blocking threads, so there a short blocking run
    // races its own timers.)
    if !env.virtual_time {
        let quick = q.try_push(1).unwrap();
        env.within(env.patience(), "the queue to empty", q.wait_empty())
            .await;
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert!(dead_letters(&q).iter().all(|d| d.id != quick));
        let s = pool.stats();
        assert_eq!((s.ok, s.blocking_overruns), (1, 2), "{s:#?}");
    }

    let report = pool.shutdown(u).await;
    assert_eq!(report.handed_back, 0);
    assert_eq!(report.stats.blocking_overruns, 2);
    assert_eq!(report.stats.blocking_overruns_running, 0);
    assert!(kinds(&report.diagnosis).contains(&FindingKind::BlockingOverruns));
    assert_conserved(&q);
}

// ----- 8. watchdog --------------------------------------------------------------------------

/// A handler that pends forever with no item timeout: the watchdog reports the worker once,
/// within one interval after the limit (never before), with its index, how long it was
/// silent and the item it holds (id, type, since); the report shows in `stuck_workers()` and
/// in the shutdown report, and shutdown hands the item back.
pub(crate) async fn watchdog_reports_stuck_worker<R: Runtime, K: StoreKind<R>>(env: Env<R, K>) {
    let u = env.u;
    let (interval, limit) = (u, 3 * u);
    let q = env.queue::<u32>(Config::new(50 * u));
    let stuck_id = q.try_push(0).unwrap();
    for n in 1..=5 {
        q.try_push(n).unwrap();
    }
    let handler_start = Arc::new(Mutex::new(None));
    let start = env.now();
    let pool = Pool::builder(q.clone())
        .workers(2)
        .watchdog(Watchdog::new(interval, limit))
        .item_type(|n: &u32| if *n == 0 { "stuck" } else { "quick" })
        .spawn({
            let (handler_start, rt) = (handler_start.clone(), env.rt.clone());
            move |job: Job<u32>| {
                let stuck = job.item == 0;
                if stuck {
                    *handler_start.lock().unwrap() = Some(rt.now());
                }
                let pause = sleep(&rt, u / 10);
                async move {
                    if stuck {
                        std::future::pending::<()>().await;
                    }
                    pause.await;
                    Ok(())
                }
            }
        });
    env.until(env.patience(), "a stuck-worker report", || {
        !pool.stuck_workers().is_empty()
    })
    .await;
    let reports = pool.stuck_workers();
    assert_eq!(reports.len(), 1, "{reports:?}");
    let r = reports[0];
    assert!(r.worker < 2, "{r:?}");
    assert_eq!(r.holding.id, stuck_id);
    assert_eq!(r.holding.item_type, "stuck");
    assert!(r.silent_for > limit, "reported early: {r:?}");
    assert_eq!(r.at, r.holding.since.saturating_add(r.silent_for));
    let handler_start = handler_start.lock().unwrap().expect("handler ran");
    assert!(r.holding.since <= handler_start);
    if env.virtual_time {
        // The watchdog looks at start + k * interval: the first look past the limit is at 4u.
        assert_eq!(r.holding.since, start);
        assert_eq!(handler_start, start);
        assert!(r.silent_for <= limit + interval, "{r:?}");
        assert_eq!(r.at, start.saturating_add(limit + interval));
    }
    // Once per item, not at every look.
    sleep(&env.rt, 3 * interval).await;
    assert_eq!(pool.stuck_workers(), reports);
    assert_eq!(pool.stats().stuck_reports, 1);
    env.until(env.patience(), "the quick items", || q.stats().acked == 5)
        .await;

    let report = pool.shutdown(u).await;
    assert_eq!(report.handed_back, 1, "the stuck worker was stopped");
    assert_eq!(report.stuck, reports);
    assert_eq!(report.stats.stuck_reports, 1);
    assert!(kinds(&report.diagnosis).contains(&FindingKind::StuckWorkers));
    // The stuck item went back to the queue.
    let s = q.stats();
    assert_eq!(
        (s.in_flight, s.ready, s.acked, s.nacks),
        (0, 1, 5, 1),
        "{s:#?}"
    );
    assert_conserved(&q);
}

// ----- 9. graceful shutdown -----------------------------------------------------------------

/// Shutdown with a grace shorter than the items in flight: they are handed back
/// (`report.handed_back`), and nothing is lost.
pub(crate) async fn shutdown_short_grace_hands_items_back<R: Runtime, K: StoreKind<R>>(
    env: Env<R, K>,
) {
    shutdown_with_items_in_flight(env, false).await;
}

/// Shutdown with a grace longer than the items in flight: they finish and are acked; the
/// workers take no new items; nothing is lost.
pub(crate) async fn shutdown_long_grace_lets_items_finish<R: Runtime, K: StoreKind<R>>(
    env: Env<R, K>,
) {
    shutdown_with_items_in_flight(env, true).await;
}

async fn shutdown_with_items_in_flight<R: Runtime, K: StoreKind<R>>(
    env: Env<R, K>,
    long_grace: bool,
) {
    let u = env.u;
    let (work, grace) = if long_grace {
        (4 * u, 40 * u)
    } else {
        (20 * u, u)
    };
    let q = env.queue::<u32>(Config::new(100 * u));
    let ids: Vec<MessageId> = (0..6).map(|n| q.try_push(n).unwrap()).collect();
    let finished = Arc::new(Mutex::new(Vec::new()));
    let start = env.now();
    let pool = Pool::builder(q.clone()).workers(3).spawn({
        let (finished, rt) = (finished.clone(), env.rt.clone());
        move |job: Job<u32>| {
            let finished = finished.clone();
            let slow = sleep(&rt, work);
            async move {
                slow.await;
                finished.lock().unwrap().push(job.id);
                Ok(())
            }
        }
    });
    env.until(env.patience(), "three items in flight", || {
        q.stats().in_flight == 3
    })
    .await;
    let t = env.now();
    let report = pool.shutdown(grace).await;
    let s = q.stats();
    if long_grace {
        assert_eq!(report.handed_back, 0);
        assert_eq!(report.stats.ok, 3);
        assert_eq!((s.acked, s.ready, s.nacks), (3, 3, 0), "{s:#?}");
        env.exactly(env.now(), start.saturating_add(work), "finished at");
    } else {
        assert_eq!(report.handed_back, 3);
        assert_eq!(report.stats.ok, 0);
        assert_eq!((s.acked, s.ready, s.nacks), (0, 6, 3), "{s:#?}");
        env.exactly(env.now(), t.saturating_add(grace), "stopped at");
    }
    // Nothing in flight once shutdown returns, in its own report too.
    assert_eq!(s.in_flight, 0, "{s:#?}");
    assert_eq!(report.stats.queue.in_flight, 0, "{:#?}", report.stats.queue);
    assert_eq!((s.lease_expired, s.dead_lettered), (0, 0));
    assert_conserved(&q);

    // Every pushed id is acked, in the queue, or dead-lettered, exactly once.
    let acked = finished.lock().unwrap().clone();
    let waiting = q.try_receive_batch(usize::MAX);
    let handed_back = waiting.iter().filter(|d| d.attempt() == 2).count();
    assert_eq!(handed_back, if long_grace { 0 } else { 3 });
    let mut all: Vec<MessageId> = acked
        .iter()
        .copied()
        .chain(waiting.iter().map(|d| d.id()))
        .chain(dead_letters(&q).iter().map(|d| d.id))
        .collect();
    all.sort();
    assert_eq!(all, ids);
    assert_eq!(q.ack_batch(waiting).await.accepted(), 6 - acked.len());
    assert_eq!(q.stats().acked, 6);
    assert_conserved(&q);
}

// ----- 10. cancelled receives ---------------------------------------------------------------

/// Counts wake-ups.
#[derive(Default)]
struct Wakes(AtomicUsize);

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Receives cancelled at every point lose nothing. First, deterministically: a receiver
/// woken for an item and dropped before it took it passes the wake-up to the next waiting
/// receiver. Then many iterations of `futures::select!` where a receive races a timer and
/// another receive, with items pushed at random moments: afterwards every item was received
/// exactly once and nothing is left in flight.
pub(crate) async fn cancelled_receive_loses_nothing<R: Runtime, K: StoreKind<R>>(env: Env<R, K>) {
    let u = env.u;
    let q = env.queue::<u32>(Config::new(1000 * u));

    // The baton: r1 is woken for the item, then cancelled.
    let w1 = Arc::new(Wakes::default());
    let w2 = Arc::new(Wakes::default());
    let (waker1, waker2) = (Waker::from(w1.clone()), Waker::from(w2.clone()));
    let mut r1 = Box::pin(q.receive());
    let mut r2 = Box::pin(q.receive());
    assert!(r1
        .as_mut()
        .poll(&mut Context::from_waker(&waker1))
        .is_pending());
    assert!(r2
        .as_mut()
        .poll(&mut Context::from_waker(&waker2))
        .is_pending());
    let id = q.try_push(1).unwrap();
    assert_eq!(
        w1.0.load(Ordering::SeqCst),
        1,
        "the first waiting receiver is woken"
    );
    assert_eq!(w2.0.load(Ordering::SeqCst), 0);
    drop(r1);
    assert_eq!(w2.0.load(Ordering::SeqCst), 1, "the wake-up passes on");
    match r2.as_mut().poll(&mut Context::from_waker(&waker2)) {
        Poll::Ready(Some(d)) => {
            assert_eq!((d.id(), d.attempt()), (id, 1));
            d.ack().await.unwrap();
        }
        // A durable store commits the attempt first: the item comes once that is done.
        Poll::Pending if !K::RECEIVES_AT_ONCE => {
            let d = env
                .within(env.patience(), "the commit", r2.as_mut())
                .await
                .expect("queue open");
            assert_eq!((d.id(), d.attempt()), (id, 1));
            d.ack().await.unwrap();
        }
        other => panic!("expected the item, got {other:?}"),
    }
    drop(r2);
    assert_eq!(q.stats().delivered, 1);

    // The races.
    const ITEMS: u64 = 400;
    const CONSUMERS: u64 = 3;
    let counts: Arc<Vec<AtomicU32>> = Arc::new((0..=ITEMS).map(|_| AtomicU32::new(0)).collect());
    // The baton item above counts as received.
    let received = Arc::new(AtomicUsize::new(1));
    let cancelled = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let producer = env.spawn({
        let (q, rt) = (q.clone(), env.rt.clone());
        async move {
            let mut rng = Rng::new(0x5eed);
            for n in 0..ITEMS as u32 {
                q.try_push(n).unwrap();
                if rng.below(4) == 0 {
                    sleep(&rt, rng.up_to(u / 20)).await;
                }
            }
        }
    });
    let consumers: Vec<R::Task> = (0..CONSUMERS)
        .map(|k| {
            let (q, rt) = (q.clone(), env.rt.clone());
            let (counts, received, cancelled, failures) = (
                counts.clone(),
                received.clone(),
                cancelled.clone(),
                failures.clone(),
            );
            env.spawn(async move {
                let mut rng = Rng::new(k);
                let take = |d: Option<leaseq_async::Delivery<u32, R, K::Store<u32>>>| match d {
                    Some(d) => {
                        counts[d.id().get() as usize].fetch_add(1, Ordering::SeqCst);
                        received.fetch_add(1, Ordering::SeqCst);
                        if let Err(e) = futures::executor::block_on(d.ack()) {
                            failures.lock().unwrap().push(format!("ack refused: {e}"));
                        }
                    }
                    None => failures.lock().unwrap().push("queue closed".into()),
                };
                // (Items dead-lettered count as done: only a durable store makes any here.)
                let done = || received.load(Ordering::SeqCst) + q.stats().dead_lettered as usize;
                while done() < (ITEMS + 1) as usize {
                    let timer = sleep(&rt, rng.up_to(u / 20)).fuse();
                    let a = q.receive().fuse();
                    let b = q.receive().fuse();
                    let mut timer = pin!(timer);
                    let mut a = pin!(a);
                    let mut b = pin!(b);
                    futures::select! {
                        d = a => take(d),
                        d = b => take(d),
                        () = timer => {
                            cancelled.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }
            })
        })
        .collect();
    env.within(env.patience(), "the producer", producer).await;
    for c in consumers {
        env.within(env.patience(), "a consumer to finish", c).await;
    }

    let failures = failures.lock().unwrap().clone();
    assert!(failures.is_empty(), "{failures:?}");
    let dead: Vec<u64> = dead_letters(&q).iter().map(|d| d.id.get()).collect();
    for (n, c) in counts.iter().enumerate().skip(1) {
        let expected = u32::from(!dead.contains(&(n as u64)));
        assert_eq!(
            c.load(Ordering::SeqCst),
            expected,
            "item {n} received that many times"
        );
    }
    assert!(
        cancelled.load(Ordering::SeqCst) > 0,
        "no receive was ever cancelled"
    );
    let s = q.stats();
    if K::RECEIVES_AT_ONCE {
        assert_eq!((s.delivered, s.redelivered), (ITEMS + 1, 0), "{s:#?}");
        assert_eq!((s.acked, s.in_flight, s.ready), (ITEMS + 1, 0, 0));
    } else {
        // A durable store: a receive cancelled while its lease's attempt was being
        // committed hands the lease back as a drop, its attempt counted (it may be on disk
        // already). So items are redelivered (never to two holders: each was received at
        // most once above), and one cancelled on each of its attempts is dead-lettered.
        // Every redelivery and dead letter is such a hand-back.
        assert_eq!(s.nacks, s.redelivered + s.dead_lettered, "{s:#?}");
        assert_eq!(s.delivered, s.acked + s.nacks, "{s:#?}");
        assert_eq!(s.acked + s.dead_lettered, ITEMS + 1, "{s:#?}");
        assert_eq!((s.in_flight, s.ready), (0, 0), "{s:#?}");
        assert!(dead.iter().all(|id| *id > 0));
    }
    assert_conserved(&q);
}
