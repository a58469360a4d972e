//! The flow tests' ledger: a row per run, its start and finish on the database's clock,
//! written by the handlers of every process; and the checks made on it.

use leaseq_test_kit::pg as common;

/// One run of an item, as the ledger has it (times in microseconds since the epoch).
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) id: i64,
    pub(crate) kind: String,
    pub(crate) part: String,
    pub(crate) group: String,
    pub(crate) index: i32,
    pub(crate) started: i64,
    pub(crate) finished: Option<i64>,
}

/// A process's connection to the ledger table.
pub(crate) struct Ledger {
    client: tokio_postgres::Client,
    start: String,
    finish: String,
    hang: String,
    hung: String,
    finished: String,
    all: String,
}

impl Ledger {
    /// Makes the table.
    pub(crate) async fn create(url: &str, table: &str) {
        common::sql(url)
            .await
            .batch_execute(&format!(
                "CREATE TABLE {table} (id bigint, attempt integer, kind text, part text,
                   grp text, idx integer, started timestamptz NOT NULL, finished timestamptz,
                   hung boolean NOT NULL DEFAULT false,
                   PRIMARY KEY (id, attempt))"
            ))
            .await
            .expect("the ledger table");
    }

    /// A connection for this process's handlers.
    pub(crate) async fn connect(url: &str, table: &str) -> Ledger {
        Ledger {
            client: common::sql(url).await,
            start: format!(
                "INSERT INTO {table} (id, attempt, kind, part, grp, idx, started)
                 VALUES ($1, $2, $3, $4, $5, $6, clock_timestamp())"
            ),
            finish: format!(
                "UPDATE {table} SET finished = clock_timestamp() WHERE id = $1 AND attempt = $2"
            ),
            hang: format!("UPDATE {table} SET hung = true WHERE id = $1 AND attempt = $2"),
            hung: format!("SELECT EXISTS (SELECT 1 FROM {table} WHERE hung)"),
            finished: format!("SELECT count(DISTINCT id) FROM {table} WHERE finished IS NOT NULL"),
            all: format!(
                "SELECT id, kind, part, grp, idx, (EXTRACT(EPOCH FROM started) * 1000000)::bigint,
                        (EXTRACT(EPOCH FROM finished) * 1000000)::bigint
                 FROM {table} ORDER BY started"
            ),
        }
    }

    /// A run of item `id` (payload `kind|part|group|index`) starts.
    pub(crate) async fn start(&self, id: i64, attempt: i32, payload: &[u8]) {
        let text = String::from_utf8_lossy(payload).to_string();
        let f: Vec<&str> = text.split('|').collect();
        let index: i32 = f[3].parse().expect("index");
        self.client
            .execute(&self.start, &[&id, &attempt, &f[0], &f[1], &f[2], &index])
            .await
            .expect("ledger start");
    }

    /// The run finishes (before its ack).
    pub(crate) async fn finish(&self, id: i64, attempt: i32) {
        self.client
            .execute(&self.finish, &[&id, &attempt])
            .await
            .expect("ledger finish");
    }

    /// The run hangs (for the parent to kill its process).
    pub(crate) async fn hang(&self, id: i64, attempt: i32) {
        self.client
            .execute(&self.hang, &[&id, &attempt])
            .await
            .expect("ledger hang");
    }

    /// Whether a run hangs.
    pub(crate) async fn hung(&self) -> bool {
        self.client
            .query_one(&self.hung, &[])
            .await
            .expect("ledger hung")
            .get(0)
    }

    /// How many items have finished.
    pub(crate) async fn finished(&self) -> i64 {
        self.client
            .query_one(&self.finished, &[])
            .await
            .expect("ledger count")
            .get(0)
    }

    /// Every run, by start.
    pub(crate) async fn entries(&self) -> Vec<Entry> {
        let rows = self.client.query(&self.all, &[]).await.expect("ledger");
        rows.iter()
            .map(|r| Entry {
                id: r.get(0),
                kind: r.get(1),
                part: r.get(2),
                group: r.get(3),
                index: r.get(4),
                started: r.get(5),
                finished: r.get(6),
            })
            .collect()
    }
}

/// Every item of `total` finished, each once, but for an item whose finish was recorded
/// before `killed_at` (the instant the parent killed a child, if it did) and that ran again
/// after it: a handler records its finish before the pool acks, so a process killed between
/// the two leaves an item whose ack never committed, and it is delivered again (at least
/// once, as the guarantee says). Any other second finish fails.
pub(crate) fn each_once(entries: &[Entry], total: usize, killed_at: Option<i64>) {
    let mut done: std::collections::BTreeMap<i64, Vec<&Entry>> = Default::default();
    for e in entries.iter().filter(|e| e.finished.is_some()) {
        done.entry(e.id).or_default().push(e);
    }
    assert_eq!(done.len(), total, "items finished");
    for (id, runs) in &done {
        if runs.len() == 1 {
            continue;
        }
        let lost_ack = killed_at.is_some_and(|k| {
            runs.len() == 2 && runs[0].finished.is_some_and(|f| f <= k) && runs[1].started >= k
        });
        assert!(
            lost_ack,
            "item {id} finished twice: {runs:?} (kill at {killed_at:?})"
        );
    }
}

/// The database's clock now, in the ledger's unit (microseconds since the epoch).
pub(crate) async fn db_now(url: &str) -> i64 {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client
        .query_one(
            "SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::bigint",
            &[],
        )
        .await
        .expect("clock")
        .get(0)
}

/// The most finished runs that `pick` takes running at one instant (a finish at the same
/// microsecond as a start counted first).
pub(crate) fn most_at_once(entries: &[Entry], pick: impl Fn(&Entry) -> bool) -> usize {
    let mut events: Vec<(i64, i32)> = Vec::new();
    for e in entries.iter().filter(|e| pick(e)) {
        if let Some(f) = e.finished {
            events.push((e.started, 1));
            events.push((f, -1));
        }
    }
    events.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in events {
        now += d;
        most = most.max(now);
    }
    most as usize
}

/// The leases' starts of `queue` (`leased_at` in the record of finished jobs), in order.
pub(crate) async fn lease_starts(url: &str, queue: &str) -> Vec<i64> {
    let rows = common::sql(url)
        .await
        .query(
            &format!(
                "SELECT (EXTRACT(EPOCH FROM leased_at) * 1000000)::bigint FROM {}.history
                 WHERE queue = $1 ORDER BY leased_at",
                common::SCHEMA
            ),
            &[&queue],
        )
        .await
        .expect("the record of finished jobs");
    rows.iter().map(|r| r.get(0)).collect()
}

/// Each of `groups` groups ran its `per` items one at a time in push order: sorted by
/// start, indexes never go back, each run starts after the one before finished, and a
/// run that never finished (killed) is run again before the next index; so is a run that
/// finished before the kill at `killed_at` and whose ack died with its process (see
/// [`each_once`]), the same index again after the kill.
pub(crate) fn groups_in_order(entries: &[Entry], groups: usize, per: u32, killed_at: Option<i64>) {
    let lost_ack = |a: &Entry, b: &Entry| {
        killed_at.is_some_and(|k| a.finished.is_some_and(|f| f <= k) && b.started >= k)
    };
    let mut by_group: std::collections::BTreeMap<&str, Vec<&Entry>> = Default::default();
    for e in entries {
        by_group.entry(e.group.as_str()).or_default().push(e);
    }
    assert_eq!(by_group.len(), groups, "groups seen");
    for (g, runs) in by_group {
        let finished: Vec<&Entry> = runs
            .iter()
            .copied()
            .filter(|e| e.finished.is_some())
            .collect();
        let mut done: Vec<i32> = finished.iter().map(|e| e.index).collect();
        // A run again of the same index after a lost ack is the same item, once in the order.
        for w in finished.windows(2).rev() {
            if w[0].id == w[1].id && lost_ack(w[0], w[1]) {
                let at = finished
                    .iter()
                    .position(|e| std::ptr::eq(*e, w[1]))
                    .expect("in it");
                done.remove(at);
            }
        }
        assert_eq!(
            done,
            (0..per as i32).collect::<Vec<_>>(),
            "group {g} finished out of push order"
        );
        for w in runs.windows(2) {
            let (a, b) = (w[0], w[1]);
            match a.finished {
                Some(f) => assert!(
                    b.started > f && (b.index == a.index + 1 || (b.id == a.id && lost_ack(a, b))),
                    "group {g}: index {} started before {} finished, or out of order",
                    b.index,
                    a.index
                ),
                None => assert_eq!(
                    b.index, a.index,
                    "group {g}: the killed run not retried first"
                ),
            }
        }
    }
}

/// The leases of `queue` as the record of finished jobs has them: `(leased_at,
/// finished_at)` (the settle's instant, before its commit), by start.
pub(crate) async fn lease_spans(url: &str, queue: &str) -> Vec<(i64, i64)> {
    let rows = common::sql(url)
        .await
        .query(
            &format!(
                "SELECT (EXTRACT(EPOCH FROM leased_at) * 1000000)::bigint,
                        (EXTRACT(EPOCH FROM finished_at) * 1000000)::bigint
                 FROM {}.history WHERE queue = $1 ORDER BY leased_at",
                common::SCHEMA
            ),
            &[&queue],
        )
        .await
        .expect("the record of finished jobs");
    rows.iter().map(|r| (r.get(0), r.get(1))).collect()
}

/// The most leases of `spans` in flight at a lease's start (itself included), against
/// `limit_at` that instant: the first start found over it, if any.
pub(crate) fn over_limit(
    spans: &[(i64, i64)],
    limit_at: impl Fn(i64) -> usize,
) -> Option<(i64, usize, usize)> {
    spans.iter().find_map(|&(start, _)| {
        let in_flight = spans
            .iter()
            .filter(|&&(s, f)| s <= start && start < f)
            .count();
        let limit = limit_at(start);
        (in_flight > limit).then_some((start, in_flight, limit))
    })
}
