//! `PgInspector::queue_overview`: the same queues and counts as `PgInspector::queues` on a
//! small table; on a large one (past the sample's 400 pages) every count at or below the
//! cap still exact, each count past it flagged as an estimate, never below the cap plus
//! one, and near the truth; queues holding only leased rows or only dead letters listed;
//! the pause flag read. `queue_counts` reads one queue the same way.

use leaseq_test_kit::pg as common;

use leaseq_async::StoredCounts;
use leaseq_postgres::PgInspector;

const CAP: u64 = 100;

/// How a test row waits or where it is.
#[derive(Clone, Copy)]
enum Kind {
    Ready,
    Delayed,
    Leased,
    Dead,
}

/// Inserts `n` rows of `queue` of `kind`, ids from `first`, with 100-byte payloads.
async fn rows(db: &tokio_postgres::Client, s: &str, queue: &str, kind: Kind, n: i64, first: i64) {
    let (state, delayed): (i16, bool) = match kind {
        Kind::Ready => (0, false),
        Kind::Delayed => (0, true),
        Kind::Leased => (1, false),
        Kind::Dead => (2, false),
    };
    db.execute(
        &format!(
            "INSERT INTO \"{s}\".items (id, queue, state, priority, visible_at, deadline, dead_at, payload)
             SELECT g, $1, $2::smallint, (g % 8)::smallint,
                    now() + CASE WHEN $5 THEN interval '1 hour' ELSE interval '0' END,
                    CASE WHEN $2::smallint = 1 THEN now() + interval '1 hour' END,
                    CASE WHEN $2::smallint = 2 THEN now() END,
                    decode(repeat('ab', 100), 'hex')
             FROM generate_series($3::bigint, $3::bigint + $4::bigint - 1) g"
        ),
        &[&queue, &state, &first, &n, &delayed],
    )
    .await
    .expect("insert");
}

/// The small queues: `a` (3 ready, 2 delayed, 1 leased; paused), `b` (2 dead letters
/// only), `c` (1 leased only), `edge` (exactly `CAP` dead letters), `mid` (`CAP` + 50).
async fn small_queues(db: &tokio_postgres::Client, s: &str) {
    rows(db, s, "a", Kind::Ready, 3, 1).await;
    rows(db, s, "a", Kind::Delayed, 2, 10).await;
    rows(db, s, "a", Kind::Leased, 1, 20).await;
    rows(db, s, "b", Kind::Dead, 2, 30).await;
    rows(db, s, "c", Kind::Leased, 1, 40).await;
    rows(db, s, "edge", Kind::Dead, CAP as i64, 1_000).await;
    rows(db, s, "mid", Kind::Dead, CAP as i64 + 50, 2_000).await;
    db.execute(
        &format!("INSERT INTO \"{s}\".queue_pauses (queue) VALUES ('a')"),
        &[],
    )
    .await
    .expect("pause");
}

fn find<'a>(counts: &'a [StoredCounts], queue: &str) -> &'a StoredCounts {
    counts
        .iter()
        .find(|c| c.queue == queue)
        .unwrap_or_else(|| panic!("{queue} not listed: {counts:?}"))
}

#[test]
fn small_tables_are_counted_exactly_and_large_ones_past_the_cap_estimated() {
    common::with_server(|url| async move {
        let (s, db) = common::migrated_scratch(&url, "overview").await;
        small_queues(&db, &s).await;
        let mut inspector = PgInspector::connect(&url, &s).await.expect("connect");

        // A small table: every count exact, as `queues` has them (`mid` included).
        let exact = inspector.queues().await.expect("queues");
        let overview = inspector.queue_overview(CAP).await.expect("overview");
        assert_eq!(overview, exact);
        assert_eq!(find(&overview, "mid").dead, CAP + 50);
        assert!(find(&overview, "a").paused);
        for queue in ["a", "b", "mid", "none"] {
            let one = inspector.queue_counts(queue, CAP).await.expect("counts");
            assert_eq!(one, inspector.counts(queue).await.expect("counts"));
        }

        // A large one: 40,000 ready rows in `big`, past the sample's 400 pages.
        rows(&db, &s, "big", Kind::Ready, 40_000, 100_000).await;
        db.batch_execute(&format!("ANALYZE \"{s}\".items"))
            .await
            .expect("analyze");
        let pages: i64 = db
            .query_one(
                &format!("SELECT pg_relation_size('\"{s}\".items') / 8192"),
                &[],
            )
            .await
            .expect("size")
            .get(0);
        assert!(pages > 400, "the table holds {pages} pages only");
        let exact = inspector.queues().await.expect("queues");
        let overview = inspector.queue_overview(CAP).await.expect("overview");
        let names = |c: &[StoredCounts]| c.iter().map(|c| c.queue.clone()).collect::<Vec<_>>();
        assert_eq!(names(&overview), names(&exact));
        for (o, e) in overview.iter().zip(&exact) {
            assert_eq!(o.estimated_above, Some(CAP));
            assert_eq!(o.paused, e.paused, "{}", o.queue);
            for (got, want) in [
                (o.ready, e.ready),
                (o.delayed, e.delayed),
                (o.in_flight, e.in_flight),
                (o.dead, e.dead),
            ] {
                if want <= CAP {
                    assert_eq!(got, want, "an exact count: {o:?} {e:?}");
                    assert!(!o.is_estimate(got));
                } else {
                    assert!(o.is_estimate(got), "{o:?}");
                    assert!(got > CAP, "{o:?}");
                }
            }
        }
        assert_eq!(find(&overview, "edge").dead, CAP);
        // One queue's counts, read the same way (an estimate from a sample of its own).
        for queue in ["a", "b", "c", "edge", "mid", "big"] {
            let mut one = inspector.queue_counts(queue, CAP).await.expect("counts");
            let listed = find(&overview, queue);
            for (got, listed) in [
                (&mut one.ready, listed.ready),
                (&mut one.delayed, listed.delayed),
                (&mut one.in_flight, listed.in_flight),
                (&mut one.dead, listed.dead),
            ] {
                if listed > CAP {
                    assert!(*got > CAP, "{queue}: {got} against {listed}");
                    *got = listed;
                }
            }
            assert_eq!(&one, listed);
        }
        let none = inspector.queue_counts("none", CAP).await.expect("counts");
        assert_eq!((none.live(), none.dead, none.paused), (0, 0, false));
        assert!(find(&overview, "a").paused && !find(&overview, "big").paused);
        // The sample reads about 400 of the pages: its estimate of 40,000 is near.
        let big = find(&overview, "big").ready;
        assert!((20_000..=60_000).contains(&big), "big: {big}");
        common::drop_schema(&url, &s).await;
    });
}
