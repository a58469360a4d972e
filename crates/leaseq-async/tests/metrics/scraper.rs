//! The test recorder and its scraper: sums of every value recorded, compared with stats.

use super::*;

impl Recorder {
    pub(super) fn new() -> Self {
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
    pub(super) fn run<F: Future<Output = ()>>(&self, body: impl FnOnce(SimRuntime, Scraper) -> F) {
        let rt = SimRuntime::new();
        let scraper = Scraper {
            snapshotter: self.snapshotter.clone(),
            scraped: self.scraped.clone(),
        };
        metrics::with_local_recorder(&self.recorder, || rt.block_on(body(rt.clone(), scraper)));
    }
}

pub(super) fn labels(queue: &str, more: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = std::iter::once(("queue", queue))
        .chain(more.iter().copied())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    all.sort();
    all
}

impl Scraper {
    /// Takes what the recorder holds into the sums.
    pub(super) fn scrape(&self) {
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
    pub(super) fn counter(&self, name: &str, queue: &str, more: &[(&str, &str)]) -> u64 {
        let key = (name.to_string(), labels(queue, more));
        let scraped = self.scraped.lock().unwrap();
        *scraped
            .counters
            .get(&key)
            .unwrap_or_else(|| panic!("no counter {key:?} in {:?}", scraped.counters.keys()))
    }

    pub(super) fn gauge(&self, name: &str, queue: &str) -> f64 {
        let key = (name.to_string(), labels(queue, &[]));
        let scraped = self.scraped.lock().unwrap();
        *scraped
            .gauges
            .get(&key)
            .unwrap_or_else(|| panic!("no gauge {key:?}"))
    }

    pub(super) fn histogram(&self, name: &str, queue: &str, more: &[(&str, &str)]) -> Vec<f64> {
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
    pub(super) fn assert_queue_matches(&self, queue: &str, s: &Stats, dead_by: &[(Reason, u64)]) {
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
    pub(super) fn assert_pool_matches(&self, queue: &str, stats: &PoolStats) {
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

pub(super) const SECOND: Duration = Duration::from_secs(1);

pub(super) fn named(
    rt: &SimRuntime,
    name: &'static str,
    config: Config,
) -> LeaseQueue<u32, SimRuntime> {
    sim::named_queue(rt, name, config)
}
