//! The metrics a queue and its pool report agree with their stats (feature `metrics`;
//! virtual time, a debugging recorder installed for the test only).
//!
//! Run with `cargo test -p leaseq-async --features metrics`.
#![cfg(feature = "metrics")]

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::metrics::{self as names, reason_label, PUBLISH_EVERY};
use leaseq_async::{
    Config, ItemTimeout, JobError, LeaseQueue, Pool, PoolStats, Push, Reason, Runtime, SimRuntime,
    Stats,
};
use leaseq_test_kit::sim::{self, sleep};
use leaseq_test_kit::steps;
use metrics::Unit;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::MetricKind;

/// A metric's name and labels, sorted.
type Key = (String, Vec<(String, String)>);

/// Every value the recorder was given, added up across scrapes (its snapshots reset
/// counters and gauges, and leaseq moves gauges by their changes, so sums are exact).
#[derive(Default)]
struct Scraped {
    counters: BTreeMap<Key, u64>,
    gauges: BTreeMap<Key, f64>,
    histograms: BTreeMap<Key, Vec<f64>>,
}

struct Recorder {
    recorder: DebuggingRecorder,
    snapshotter: Snapshotter,
    scraped: Arc<Mutex<Scraped>>,
}

impl Recorder {
    fn new() -> Self {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        Recorder {
            recorder,
            snapshotter,
            scraped: Arc::default(),
        }
    }

    /// Runs `body` on a fresh virtual-time runtime with this recorder installed (the
    /// simulation runs every task on this thread).
    fn run<F: Future<Output = ()>>(&self, body: impl FnOnce(SimRuntime, Scraper) -> F) {
        let rt = SimRuntime::new();
        let scraper = Scraper {
            snapshotter: self.snapshotter.clone(),
            scraped: self.scraped.clone(),
        };
        metrics::with_local_recorder(&self.recorder, || rt.block_on(body(rt.clone(), scraper)));
    }
}

#[derive(Clone)]
struct Scraper {
    snapshotter: Snapshotter,
    scraped: Arc<Mutex<Scraped>>,
}

fn labels(queue: &str, more: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = std::iter::once(("queue", queue))
        .chain(more.iter().copied())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    all.sort();
    all
}

impl Scraper {
    /// Takes what the recorder holds into the sums.
    fn scrape(&self) {
        let mut scraped = self.scraped.lock().unwrap();
        for (key, _, _, value) in self.snapshotter.snapshot().into_vec() {
            let (kind, key) = key.into_parts();
            let mut labels: Vec<(String, String)> = key
                .labels()
                .map(|l| (l.key().to_string(), l.value().to_string()))
                .collect();
            labels.sort();
            let k = (key.name().to_string(), labels);
            match (kind, value) {
                (MetricKind::Counter, DebugValue::Counter(n)) => {
                    *scraped.counters.entry(k).or_default() += n
                }
                (MetricKind::Gauge, DebugValue::Gauge(x)) => {
                    *scraped.gauges.entry(k).or_default() += x.into_inner()
                }
                (MetricKind::Histogram, DebugValue::Histogram(xs)) => scraped
                    .histograms
                    .entry(k)
                    .or_default()
                    .extend(xs.into_iter().map(|x| x.into_inner())),
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    /// A counter's sum so far, which must have been registered.
    fn counter(&self, name: &str, queue: &str, more: &[(&str, &str)]) -> u64 {
        let key = (name.to_string(), labels(queue, more));
        let scraped = self.scraped.lock().unwrap();
        *scraped
            .counters
            .get(&key)
            .unwrap_or_else(|| panic!("no counter {key:?} in {:?}", scraped.counters.keys()))
    }

    fn gauge(&self, name: &str, queue: &str) -> f64 {
        let key = (name.to_string(), labels(queue, &[]));
        let scraped = self.scraped.lock().unwrap();
        *scraped
            .gauges
            .get(&key)
            .unwrap_or_else(|| panic!("no gauge {key:?}"))
    }

    fn histogram(&self, name: &str, queue: &str, more: &[(&str, &str)]) -> Vec<f64> {
        let key = (name.to_string(), labels(queue, more));
        self.scraped
            .lock()
            .unwrap()
            .histograms
            .get(&key)
            .cloned()
            .unwrap_or_default()
    }

    /// Asserts that every queue metric equals its `Stats` field.
    fn assert_queue_matches(&self, queue: &str, s: &Stats, dead_by: &[(Reason, u64)]) {
        let counters = [
            (names::PUSHED, s.pushed),
            (names::REJECTED, s.rejected),
            (names::DELIVERED, s.delivered),
            (names::REDELIVERED, s.redelivered),
            (names::ACKED, s.acked),
            (names::NACKED, s.nacks),
            (names::LEASE_EXPIRED, s.lease_expired),
            (names::UNKNOWN_RECEIPTS, s.unknown_receipts),
            (names::EXTENDS, s.extends),
            (names::EXTENDS_CAPPED, s.extends_capped),
            (names::REDRIVEN, s.redriven),
            (names::DEAD_LETTERS_TAKEN, s.taken),
            (names::EVENTS_DROPPED, s.events_dropped),
            (names::CANCELLED, s.cancelled),
            (names::REPLACED, s.replaced),
            (names::DUPLICATES, s.duplicates),
        ];
        for (name, expected) in counters {
            assert_eq!(self.counter(name, queue, &[]), expected, "{name}");
        }
        let late = |outcome| self.counter(names::LATE_ACKS, queue, &[("outcome", outcome)]);
        assert_eq!(late("unclaimed"), s.late_acks_unclaimed);
        assert_eq!(late("stale"), s.late_acks_stale);
        let mut dead_total = 0;
        for reason in Reason::ALL {
            let n = self.counter(
                names::DEAD_LETTERED,
                queue,
                &[("reason", reason_label(reason))],
            );
            let expected = dead_by
                .iter()
                .find(|(r, _)| *r == reason)
                .map_or(0, |(_, n)| *n);
            assert_eq!(n, expected, "dead-lettered for {reason}");
            dead_total += n;
        }
        assert_eq!(dead_total, s.dead_lettered);
        let expired = self.counter(names::DEAD_LETTERED, queue, &[("reason", "expired")]);
        assert_eq!(expired, s.expired);
        let gauges = [
            (names::READY, s.ready),
            (names::DELAYED, s.delayed),
            (names::IN_FLIGHT, s.in_flight),
            (names::DEAD, s.dead),
            (names::PAUSED, u64::from(s.paused)),
        ];
        for (name, expected) in gauges {
            assert_eq!(self.gauge(name, queue), expected as f64, "{name}");
        }
    }

    /// Asserts that the pool metrics add up to `stats`, per type.
    fn assert_pool_matches(&self, queue: &str, stats: &PoolStats) {
        let mut totals = [0u64; 5];
        for (ty, report) in &stats.types {
            let handled = |outcome| {
                self.counter(
                    names::POOL_HANDLED,
                    queue,
                    &[("kind", ty), ("outcome", outcome)],
                )
            };
            let by_outcome = [
                handled("ok"),
                handled("failed"),
                handled("permanent"),
                handled("timed_out"),
                handled("panicked"),
            ];
            assert_eq!(by_outcome[0], report.ok, "{ty} ok");
            assert_eq!(by_outcome[1] + by_outcome[2], report.failed, "{ty} failed");
            assert_eq!(by_outcome[3], report.timed_out, "{ty} timed out");
            assert_eq!(by_outcome[4], report.panicked, "{ty} panicked");
            let times = self.histogram(names::POOL_HANDLING_SECONDS, queue, &[("kind", ty)]);
            assert_eq!(
                times.len() as u64,
                report.handled,
                "{ty}: one time per handling"
            );
            for (t, n) in totals.iter_mut().zip(by_outcome) {
                *t += n;
            }
        }
        assert_eq!(
            totals,
            [
                stats.ok,
                stats.failed,
                stats.permanent,
                stats.timed_out,
                stats.panicked
            ]
        );
    }
}

const SECOND: Duration = Duration::from_secs(1);

fn named(rt: &SimRuntime, name: &'static str, config: Config) -> LeaseQueue<u32, SimRuntime> {
    sim::named_queue(rt, name, config)
}

/// Every queue metric, after a workload that moves every `Stats` field, equals the stats
/// read at the end: counters, dead letters by reason, late acks by kind, gauges.
#[test]
fn queue_metrics_equal_the_stats() {
    let recorder = Recorder::new();
    recorder.run(|rt, scraper| async move {
        let config = Config::new(SECOND)
            .with_max_attempts(2)
            .with_max_lease(2 * SECOND)
            .with_capacity(100)
            .with_event_capacity(1);
        // Events recorded (and never polled) into a buffer of one: some are dropped.
        let q = LeaseQueue::<u32, SimRuntime>::builder(config)
            .runtime(rt.clone())
            .name("admin")
            .events(leaseq_async::EventMask::ALL)
            .build()
            .unwrap();
        let expire = SECOND + SECOND / 10;
        // A lease runs out; the late ack is accepted (unclaimed).
        q.try_push(0).unwrap();
        let d = q.receive().await.unwrap();
        sleep(&rt, expire).await;
        d.ack().await.unwrap();
        // A lease runs out and is delivered again; the first holder's ack is stale.
        q.try_push(1).unwrap();
        let first = q.receive().await.unwrap();
        sleep(&rt, expire).await;
        let second = q.receive().await.unwrap();
        assert_eq!(second.attempt(), 2);
        assert!(first.ack().await.is_err());
        second.ack().await.unwrap();
        // A nack at the last attempt; a poison item.
        let nacked = q.try_push(2).unwrap();
        q.receive().await.unwrap().nack("again").await.unwrap();
        q.receive().await.unwrap().nack("boom").await.unwrap();
        q.try_push(3).unwrap();
        steps::dead_letter_next(&q, "poison").await;
        // An extend capped by the max lease, then a release.
        q.try_push(4).unwrap();
        let mut d = q.receive().await.unwrap();
        d.extend(10 * SECOND).await.unwrap();
        d.extend(Duration::ZERO).await.unwrap();
        // An item that expires unreceived, one born expired (refused), one delayed.
        q.push_with(5, Push::new().ttl(SECOND / 2)).await.unwrap();
        assert!(q.try_push_with(6, Push::new().ttl(Duration::ZERO)).is_err());
        q.push_with(7, Push::new().delay(60 * SECOND))
            .await
            .unwrap();
        sleep(&rt, SECOND).await;
        // A dead letter redriven; the released item held at the end; one more pushed.
        q.store().redrive(nacked).unwrap();
        let held = q.receive().await.unwrap();
        assert_eq!(held.item(), &4);
        q.try_push(8).unwrap();
        // Keys: a duplicate refused, a pending item replaced, one cancelled.
        let keyed = |key: &str| Push::new().key(key);
        q.try_push_with(9, keyed("k")).unwrap();
        assert!(q.try_push_with(10, keyed("k")).is_err());
        q.try_push_with(11, keyed("k").replace_pending()).unwrap();
        let doomed = q.try_push(12).unwrap();
        q.cancel(doomed).await.unwrap();
        let s = q.stats();
        assert!(s.events_dropped > 0);
        assert_eq!((s.lease_expired, s.expired, s.rejected), (2, 1, 2));
        assert_eq!((s.ready, s.delayed, s.in_flight, s.dead), (3, 1, 1, 2));
        assert_eq!((s.cancelled, s.replaced, s.duplicates), (2, 1, 1));
        assert_eq!((s.late_acks_unclaimed, s.late_acks_stale), (1, 1));
        assert_eq!((s.extends_capped, s.redriven, s.redelivered), (1, 1, 3));
        let dead_by = [
            (Reason::Expired, 1),
            (Reason::Nacked, 1),
            (Reason::Rejected, 1),
        ];
        scraper.scrape();
        scraper.assert_queue_matches("admin", &s, &dead_by);
        // Dropped at its last attempt: dead-lettered too. Then every dead letter taken.
        drop(held);
        let taken = q.store().take_dead_letters();
        assert_eq!(taken.len(), 3);
        let s = q.stats();
        scraper.scrape();
        let dead_by = [
            (Reason::Expired, 1),
            (Reason::Nacked, 1),
            (Reason::Rejected, 1),
            (Reason::Dropped, 1),
        ];
        scraper.assert_queue_matches("admin", &s, &dead_by);
        assert_eq!((s.taken, s.dead), (3, 0));
    });
}

/// A pool's handled counts and handling times, by type and outcome, add up to its stats;
/// the queue's dead letters by reason tell timeouts, panics and permanent errors apart.
#[test]
fn pool_metrics_add_up_to_the_pool_stats() {
    let recorder = Recorder::new();
    recorder.run(|rt, scraper| async move {
        let q = named(&rt, "jobs", Config::new(5 * SECOND).with_max_attempts(2));
        for n in 0..50 {
            q.try_push(n).unwrap();
        }
        let pool = Pool::builder(q.clone())
            .workers(3)
            .item_type(|n: &u32| if n % 2 == 0 { "even" } else { "odd" })
            .item_timeout(ItemTimeout::Fixed(SECOND))
            .spawn({
                let rt = rt.clone();
                move |job| {
                    let rt = rt.clone();
                    async move {
                        let took = match job.item % 10 {
                            2 => 3 * SECOND, // times out at every attempt
                            _ => Duration::from_millis(10),
                        };
                        sleep(&rt, took).await;
                        match job.item % 10 {
                            0 => Err(JobError::permanent("bad input")),
                            1 => Err(JobError::retry("always fails")),
                            3 if job.attempt == 1 => panic!("first attempt"),
                            5 if job.attempt == 1 => Err(JobError::retry("once")),
                            _ => Ok(()),
                        }
                    }
                }
            });
        q.wait_empty().await;
        let stats = pool.stats();
        assert_eq!(
            (stats.ok, stats.permanent, stats.timed_out, stats.panicked),
            (35, 5, 10, 5)
        );
        assert_eq!(stats.failed, 15);
        scraper.scrape();
        scraper.assert_pool_matches("jobs", &stats);
        let dead_by = [
            (Reason::Rejected, 5),
            (Reason::Nacked, 5),
            (Reason::TimedOut, 5),
        ];
        scraper.assert_queue_matches("jobs", &stats.queue, &dead_by);
        // Handling times are exact on virtual time: 10 ms, or the 1 s limit.
        let times = scraper.histogram(names::POOL_HANDLING_SECONDS, "jobs", &[("kind", "even")]);
        assert!(times.iter().all(|&t| t == 0.01 || t == 1.0), "{times:?}");
        assert_eq!(times.iter().filter(|&&t| t == 1.0).count(), 10);
        pool.shutdown(SECOND).await;
    });
}

/// Without any stats read, the driver publishes within `PUBLISH_EVERY`, plain pushes
/// (which skip the queue's lock) included; an idle queue wakes nobody.
#[test]
fn the_driver_publishes_within_the_interval() {
    let recorder = Recorder::new();
    recorder.run(|rt, scraper| async move {
        let q = named(&rt, "lag", Config::new(SECOND));
        for n in 0..5 {
            q.try_push(n).unwrap();
        }
        // The first change of the queue's life is published at once (the driver is woken).
        sleep(&rt, Duration::from_millis(1)).await;
        scraper.scrape();
        assert_eq!(scraper.counter(names::PUSHED, "lag", &[]), 5);
        assert_eq!(scraper.gauge(names::READY, "lag"), 5.0);
        // A change within `PUBLISH_EVERY` of that publication waits for its end.
        q.try_push(5).unwrap();
        sleep(&rt, PUBLISH_EVERY / 2).await;
        scraper.scrape();
        assert_eq!(scraper.counter(names::PUSHED, "lag", &[]), 5, "not yet");
        sleep(&rt, PUBLISH_EVERY / 2).await;
        scraper.scrape();
        assert_eq!(
            scraper.counter(names::PUSHED, "lag", &[]),
            6,
            "published by then"
        );
        assert_eq!(scraper.gauge(names::READY, "lag"), 6.0);
        // Receives and acks take the lock: published the same way.
        for _ in 0..6 {
            q.receive().await.unwrap().ack().await.unwrap();
        }
        sleep(&rt, PUBLISH_EVERY + Duration::from_millis(1)).await;
        scraper.scrape();
        assert_eq!(scraper.counter(names::ACKED, "lag", &[]), 6);
        assert_eq!(scraper.gauge(names::READY, "lag"), 0.0);
        // Nothing changes: nothing more is published.
        sleep(&rt, 3600 * SECOND).await;
        scraper.scrape();
        assert_eq!(scraper.counter(names::ACKED, "lag", &[]), 6);
        assert_eq!(scraper.gauge(names::READY, "lag"), 0.0);
    });
}

/// Queues of the same name add up, gauges included; a queue that goes away takes its share
/// off the gauges (its counters stay).
#[test]
fn same_named_queues_add_up_and_leave_their_gauges() {
    let recorder = Recorder::new();
    recorder.run(|rt, scraper| async move {
        let a = named(&rt, "shared", Config::new(SECOND));
        let b = named(&rt, "shared", Config::new(SECOND));
        a.try_push(1).unwrap();
        a.try_push(2).unwrap();
        b.try_push(3).unwrap();
        let _ = (a.stats(), b.stats());
        scraper.scrape();
        assert_eq!(scraper.counter(names::PUSHED, "shared", &[]), 3);
        assert_eq!(scraper.gauge(names::READY, "shared"), 3.0);
        b.try_push(4).unwrap();
        drop(a);
        // `a`'s driver ends and the queue goes: its two ready items leave the gauge, and
        // `b`'s unpublished push is published by its driver.
        sleep(&rt, PUBLISH_EVERY + Duration::from_millis(1)).await;
        scraper.scrape();
        assert_eq!(scraper.gauge(names::READY, "shared"), 2.0);
        assert_eq!(scraper.counter(names::PUSHED, "shared", &[]), 4);
    });
}

/// `leaseq_rejected_total` counts refusals returned to a caller: 50 awaited pushes into a
/// queue of capacity 1, drained concurrently, all wait for room and succeed (0 rejected);
/// then one `try_push` into the full queue is refused (1).
#[test]
fn awaited_pushes_waiting_for_room_publish_no_rejection() {
    let recorder = Recorder::new();
    recorder.run(|rt, scraper| async move {
        let q = named(&rt, "waits", Config::new(SECOND).with_capacity(1));
        let producer = rt.spawn(Box::pin({
            let q = q.clone();
            async move {
                for i in 0..50 {
                    q.push(i).await.unwrap();
                }
            }
        }));
        for _ in 0..50 {
            let d = q.receive().await.unwrap();
            sleep(&rt, Duration::from_millis(1)).await;
            d.ack().await.unwrap();
        }
        producer.await;
        q.try_push(50).unwrap();
        assert!(q.try_push(51).is_err());
        let s = q.stats();
        assert_eq!((s.pushed, s.acked, s.rejected), (51, 50, 1), "{s:?}");
        scraper.scrape();
        assert_eq!(scraper.counter(names::REJECTED, "waits", &[]), 1);
        assert_eq!(scraper.counter(names::PUSHED, "waits", &[]), 51);
    });
}

/// `describe` gives every series a unit and a description.
#[test]
fn describe_gives_every_metric_a_unit_and_a_description() {
    let recorder = Recorder::new();
    recorder.run(|rt, scraper| async move {
        names::describe();
        let q = named(&rt, "described", Config::new(SECOND));
        q.try_push(1).unwrap();
        let pool = Pool::builder(q.clone())
            .workers(1)
            .spawn(|_| async { Ok(()) });
        q.wait_empty().await;
        let _ = pool.stats();
        let series = scraper.snapshotter.snapshot().into_vec();
        // 18 counters (late acks in two), one per dead-letter reason, 6 gauges; 5 outcomes
        // and a histogram for the one item type.
        assert_eq!(series.len(), 18 + Reason::ALL.len() + 6 + 5 + 1);
        for (key, unit, description, _) in series {
            let name = key.key().name().to_string();
            let expected = if name == names::POOL_HANDLING_SECONDS
                || name == names::OLDEST_READY_AGE_SECONDS
            {
                Unit::Seconds
            } else {
                Unit::Count
            };
            assert_eq!(unit, Some(expected), "{name}");
            assert!(description.is_some_and(|d| !d.is_empty()), "{name}");
        }
        pool.shutdown(SECOND).await;
    });
}

/// The paused flag and the oldest ready item's age, in seconds: the age grows while the
/// item waits (published every `PUBLISH_EVERY` while items are ready, nothing else
/// changing), paused or not, and is 0 once nothing is ready.
#[test]
fn the_paused_gauge_and_the_oldest_ready_age() {
    let recorder = Recorder::new();
    recorder.run(|rt, scraper| async move {
        let q = named(&rt, "age", Config::new(SECOND));
        q.push(1).await.unwrap();
        sleep(&rt, 10 * SECOND).await;
        let _ = q.stats(); // publishes at once
        scraper.scrape();
        let age = scraper.gauge(names::OLDEST_READY_AGE_SECONDS, "age");
        assert!((9.999..=10.0).contains(&age), "{age}");
        assert_eq!(scraper.gauge(names::PAUSED, "age"), 0.0);

        q.pause().await.unwrap();
        // No stats read: the driver's publications move the age.
        sleep(&rt, 5 * SECOND + Duration::from_millis(1)).await;
        scraper.scrape();
        assert_eq!(scraper.gauge(names::PAUSED, "age"), 1.0);
        let age = scraper.gauge(names::OLDEST_READY_AGE_SECONDS, "age");
        assert!((14.0..=15.001).contains(&age), "{age}");

        q.resume().await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        let s = q.stats();
        scraper.scrape();
        assert_eq!(scraper.gauge(names::OLDEST_READY_AGE_SECONDS, "age"), 0.0);
        scraper.assert_queue_matches("age", &s, &[]);
    });
}
