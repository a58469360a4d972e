//! The kill -9 test's records and what they must show.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use leaseq_async::CodecError;
use leaseq_async::Reason;
use leaseq_core::DeadLetter;

/// A dead letter as the queue lists it.
pub(crate) type Dead = DeadLetter<Result<Vec<u8>, CodecError>>;
use tokio_postgres::Client;

use super::{
    FIRST_TRY_ERROR, HANG, MAX_ATTEMPTS, NORMAL, POISON, QUEUE_SCHEMA, TERMINATE, TERMINATE_ERROR,
    VISIBILITY,
};

/// The test's own tables, in schema `ts`.
pub(crate) fn schema_sql(ts: &str) -> String {
    format!(
        "CREATE SCHEMA {ts};
         CREATE TABLE {ts}.pushed (id bigint PRIMARY KEY, kind smallint NOT NULL);
         CREATE TABLE {ts}.runs (seq bigserial PRIMARY KEY, id bigint NOT NULL,
             attempt int NOT NULL, pid int NOT NULL,
             at timestamptz NOT NULL DEFAULT clock_timestamp());
         CREATE TABLE {ts}.outcomes (id bigint NOT NULL, attempt int NOT NULL,
             pid int NOT NULL, kind text NOT NULL, error text,
             at timestamptz NOT NULL DEFAULT clock_timestamp());
         CREATE TABLE {ts}.kills (pid int NOT NULL,
             at timestamptz NOT NULL DEFAULT clock_timestamp());"
    )
}

const AT_US: &str = "(EXTRACT(EPOCH FROM at) * 1000000)::bigint";

/// One delivery a worker got.
#[derive(Debug)]
pub(crate) struct Run {
    attempt: u32,
    pid: i32,
    /// When it was recorded (µs, the database's clock).
    at: i64,
}

/// How a run ended, `(kind, error, when)`, by `(id, attempt, pid)`.
type Outcome = (String, Option<String>, i64);

/// Everything the processes recorded, and the queue's rows at the end.
pub(crate) struct Facts {
    pushed: BTreeMap<i64, u8>,
    /// Per id, in the order they were recorded.
    runs: BTreeMap<i64, Vec<Run>>,
    outcomes: HashMap<(i64, u32, i32), Vec<Outcome>>,
    /// Killed pid to when (µs).
    kills: HashMap<i32, i64>,
    /// The queue's rows left: id to state.
    rows: HashMap<i64, i16>,
    dead: HashMap<i64, Dead>,
    /// When each dead letter died, on the database's clock (µs since the epoch).
    dead_at: HashMap<i64, i64>,
}

impl Facts {
    pub(crate) async fn load(db: &Client, ts: &str, queue: &str, dead: Vec<Dead>) -> Facts {
        let q = |sql: String| async move { db.query(&sql, &[]).await.expect("read records") };
        let pushed = q(format!("SELECT id, kind FROM {ts}.pushed")).await;
        let runs = q(format!(
            "SELECT id, attempt, pid, {AT_US} FROM {ts}.runs ORDER BY seq"
        ))
        .await;
        let outcomes = q(format!(
            "SELECT id, attempt, pid, kind, error, {AT_US} FROM {ts}.outcomes"
        ))
        .await;
        let kills = q(format!("SELECT pid, {AT_US} FROM {ts}.kills")).await;
        let rows = db
            .query(
                &format!(
                    "SELECT id, state, (EXTRACT(EPOCH FROM dead_at) * 1000000)::bigint \
                     FROM {QUEUE_SCHEMA}.items WHERE queue = $1"
                ),
                &[&queue],
            )
            .await
            .expect("read the queue's rows");
        let mut facts = Facts {
            pushed: pushed
                .iter()
                .map(|r| (r.get(0), r.get::<_, i16>(1) as u8))
                .collect(),
            runs: BTreeMap::new(),
            outcomes: HashMap::new(),
            kills: kills.iter().map(|r| (r.get(0), r.get(1))).collect(),
            rows: rows.iter().map(|r| (r.get(0), r.get(1))).collect(),
            dead_at: rows
                .iter()
                .filter_map(|r| Some((r.get(0), r.get::<_, Option<i64>>(2)?)))
                .collect(),
            dead: dead.into_iter().map(|d| (d.id.get() as i64, d)).collect(),
        };
        for r in &runs {
            facts.runs.entry(r.get(0)).or_default().push(Run {
                attempt: r.get::<_, i32>(1) as u32,
                pid: r.get(2),
                at: r.get(3),
            });
        }
        for r in &outcomes {
            let key = (r.get(0), r.get::<_, i32>(1) as u32, r.get(2));
            facts
                .outcomes
                .entry(key)
                .or_default()
                .push((r.get(3), r.get(4), r.get(5)));
        }
        facts
    }

    /// How run `r` of `id` ended (`None`: it did not say; its worker was killed).
    fn outcome(&self, id: i64, r: &Run) -> Option<(&str, Option<&str>)> {
        let o = self.outcomes.get(&(id, r.attempt, r.pid))?;
        assert_eq!(o.len(), 1, "#{id} attempt {}: outcomes {o:?}", r.attempt);
        Some((o[0].0.as_str(), o[0].1.as_deref()))
    }

    /// When the worker of run `r` was killed, if it was after `r` began and by `until`.
    fn killed_during(&self, r: &Run, until: i64) -> Option<i64> {
        self.kills
            .get(&r.pid)
            .copied()
            .filter(|k| *k >= r.at && *k <= until)
    }

    /// Whether a kill happened in `(after, until]`.
    fn kill_between(&self, after: i64, until: i64) -> bool {
        self.kills.values().any(|k| *k > after && *k <= until)
    }

    /// Checks everything; returns a one-line report.
    pub(crate) fn check(&self, kills: usize) -> String {
        assert_eq!(self.kills.len(), kills, "kills recorded");
        for id in self.runs.keys().chain(self.dead.keys()) {
            assert!(self.pushed.contains_key(id), "#{id} was never pushed");
        }
        for (id, state) in &self.rows {
            assert_eq!(*state, 2, "#{id} still live at the end");
            assert!(
                self.dead.contains_key(id),
                "#{id}: a row, not a dead letter"
            );
        }
        let mut by_reason: BTreeMap<String, usize> = BTreeMap::new();
        let (mut acked, mut runs) = (0, 0);
        let (mut by_nack, mut by_hang, mut by_stale, mut by_kill) = (0, 0, 0, 0);
        let (mut jumps, mut cut, mut held_long) = (0, 0, 0);
        let mut delays = Vec::new();
        for (&id, &kind) in &self.pushed {
            let dead = self.dead.get(&id);
            let no_runs = Vec::new();
            let rs = self.runs.get(&id).unwrap_or(&no_runs);
            runs += rs.len();
            let ack = rs.last().and_then(|r| self.outcome(id, r)).map(|o| o.0) == Some("ack");
            // 0 lost: acked (its row gone) or a dead letter, never both.
            match (ack, dead) {
                (true, None) => {
                    assert!(!self.rows.contains_key(&id), "#{id} acked, its row left");
                    let last = rs.last().expect("acked after a run");
                    let o = &self.outcomes[&(id, last.attempt, last.pid)][0];
                    if o.2 - last.at > VISIBILITY.as_micros() as i64 {
                        held_long += 1;
                    }
                    assert_eq!(kind, NORMAL, "#{id} of kind {kind} acked");
                    acked += 1;
                }
                (false, Some(d)) => *by_reason.entry(format!("{:?}", d.reason)).or_default() += 1,
                (true, Some(_)) => panic!("#{id} acked and a dead letter"),
                (false, None) => panic!(
                    "#{id} LOST: pushed, neither acked nor a dead letter; runs {rs:?}, row {:?}",
                    self.rows.get(&id)
                ),
            }
            let Some(first) = rs.first() else {
                // Every delivery cut by a kill before it was recorded.
                let d = dead.expect("checked");
                assert_eq!(d.reason, Reason::LeaseExpired, "#{id} dead with no run");
                let dead_at = self.dead_at.get(&(d.id.get() as i64)).copied().unwrap_or(0);
                assert!(
                    self.kill_between(i64::MIN, dead_at),
                    "#{id}: dead with no run and no kill before"
                );
                continue;
            };
            if first.attempt != 1 {
                assert!(
                    self.kill_between(i64::MIN, first.at),
                    "#{id}: first run at attempt {} with no kill before",
                    first.attempt
                );
                jumps += 1;
            }
            // Attempts only grow, never past the limit; each run again follows a counted
            // lease loss of the one before.
            for w in rs.windows(2) {
                let (a, b) = (&w[0], &w[1]);
                assert!(
                    b.attempt > a.attempt,
                    "#{id}: attempt {} after {}",
                    b.attempt,
                    a.attempt
                );
                if b.attempt > a.attempt + 1 {
                    assert!(
                        self.kill_between(a.at, b.at),
                        "#{id}: attempt {} after {} with no kill between",
                        b.attempt,
                        a.attempt
                    );
                    jumps += 1;
                }
                match self.outcome(id, a).map(|o| o.0) {
                    Some("ack") => panic!("#{id}: run again after its ack committed"),
                    Some("nack") => by_nack += 1,
                    Some("hang") => by_hang += 1,
                    Some("stale") => by_stale += 1,
                    // No settle recorded, or recorded and cut before it ran.
                    other => match self.killed_during(a, b.at) {
                        Some(k) => {
                            by_kill += 1;
                            cut += 1;
                            delays.push(Duration::from_micros((b.at - k) as u64));
                        }
                        None => panic!(
                            "#{id}: attempt {} (pid {}) ran while attempt {} (pid {}, {other:?}) \
                             had not ended, and that worker had not been killed since it began",
                            b.attempt, b.pid, a.attempt, a.pid
                        ),
                    },
                }
            }
            let last = rs.last().expect("checked");
            assert!(
                last.attempt <= MAX_ATTEMPTS,
                "#{id}: attempt {}",
                last.attempt
            );
            let Some(d) = dead else { continue };
            // A dead letter: its reason, attempts and error as its last run explains.
            let outcome = self.outcome(id, last);
            // Killed after it began and before the item died: a settle it recorded may not
            // have run (not an ack, which commits with its record).
            let dead_at = self.dead_at.get(&id).copied().unwrap_or(0);
            let killed = self.killed_during(last, dead_at).is_some();
            let cut_short = killed
                && d.reason == Reason::LeaseExpired
                && matches!(outcome.map(|o| o.0), None | Some("nack" | "term"));
            assert!(
                outcome.is_some() || killed,
                "#{id}: its last run {last:?} never ended"
            );
            if cut_short {
                cut += 1;
            }
            let errors: Vec<&str> = rs
                .iter()
                .filter_map(|r| self.outcome(id, r).and_then(|o| o.1))
                .collect();
            assert!(
                d.attempts <= MAX_ATTEMPTS,
                "#{id}: dead after {}",
                d.attempts
            );
            if d.attempts > last.attempt {
                // Claimed again by a worker killed before it recorded the run.
                assert!(
                    self.kill_between(last.at, dead_at),
                    "#{id}: {d:?} after {last:?}"
                );
                assert_eq!(d.reason, Reason::LeaseExpired, "#{id}");
                jumps += 1;
                continue;
            }
            assert_eq!(
                d.attempts, last.attempt,
                "#{id}: dead letter {d:?}, last run {last:?}"
            );
            match outcome {
                Some(("ack", _)) => panic!("#{id}: a dead letter after its ack committed"),
                Some(("nack", error)) if !cut_short => {
                    assert_eq!(d.reason, Reason::Nacked, "#{id}");
                    assert_eq!(d.attempts, MAX_ATTEMPTS, "#{id}");
                    assert_eq!(d.last_error.as_deref(), error, "#{id}");
                }
                Some(("term", _)) if !cut_short => {
                    assert_eq!(kind, TERMINATE, "#{id}");
                    assert_eq!(d.reason, Reason::Rejected, "#{id}");
                    assert_eq!(d.last_error.as_deref(), Some(TERMINATE_ERROR), "#{id}");
                }
                _ => {
                    assert_eq!(d.reason, Reason::LeaseExpired, "#{id}: {d:?}");
                    assert_eq!(d.attempts, MAX_ATTEMPTS, "#{id}");
                    if let Some(e) = d.last_error.as_deref() {
                        assert!(
                            errors.contains(&e),
                            "#{id}: error {e:?}, recorded {errors:?}"
                        );
                    }
                    // A hang item nacked with an error at attempt 1: the rescuer keeps it.
                    let nacked_first = rs[0].attempt == 1
                        && self.outcome(id, &rs[0]).map(|o| o.0) == Some("nack")
                        && self.killed_during(&rs[0], i64::MAX).is_none();
                    if kind == HANG && nacked_first {
                        assert_eq!(d.last_error.as_deref(), Some(FIRST_TRY_ERROR), "#{id}");
                    }
                }
            }
            assert!(matches!(kind, POISON | TERMINATE | HANG) || d.reason == Reason::LeaseExpired);
        }
        let duplicates = runs - self.runs.len();
        assert_eq!(duplicates, by_nack + by_hang + by_stale + by_kill);
        if self.pushed.len() > 200 {
            assert!(
                held_long > 0,
                "no ack came later than the visibility: no heartbeat seen"
            );
        }
        if kills >= 3 {
            assert!(cut > 0, "no kill cut a run: the kills were not mid-run");
        }
        // Measured, not asserted (timing belongs to the benchmark: BENCHMARKS.md reports
        // these delays against the visibility + one rescue tick).
        delays.sort();
        let delay = match delays.len() {
            0 => "none measured".to_string(),
            n => format!(
                "min {} / median {} / max {} ms over {n}",
                delays[0].as_millis(),
                delays[n / 2].as_millis(),
                delays[n - 1].as_millis()
            ),
        };
        format!(
            "{} pushed, {acked} acked (once each, in the ack's transaction), {} dead letters \
             {by_reason:?}; {held_long} acked after holding the lease past the visibility \
             (heartbeat); {runs} runs, {duplicates} duplicates = {by_nack} after a nack + \
             {by_hang} after a hang + {by_stale} after a refused ack + {by_kill} after a kill; \
             {cut} runs cut by kills, {jumps} attempt jumps (claimed by a killed worker before \
             it recorded the run); redelivery after a kill: {delay}; lost: 0",
            self.pushed.len(),
            self.dead.len(),
        )
    }
}
