//! The table's upkeep: after many items went through, `VACUUM` alone leaves the indexes
//! at their bloated size; the upkeep's rebuild brings each back near a fresh build, and
//! drops an index a failed rebuild left invalid.

use leaseq_test_kit::pg as common;

use std::time::Duration;

use leaseq_async::Config;
use leaseq_postgres::PgQueue;

/// A schema of its own (this run's, with a suffix): the sizes must be this test's rows only.
fn schema() -> String {
    format!("{}_upkeep", common::SCHEMA)
}
const LIVE: usize = 2_000;
const FLOW: usize = 30_000;

/// Each valid index of the items table: name and bytes, by name.
async fn index_sizes(db: &tokio_postgres::Client) -> Vec<(String, i64)> {
    db.query(
        "SELECT c.relname::text, pg_relation_size(c.oid)
         FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE i.indrelid = format('%I.items', $1::text)::regclass AND i.indisvalid
         ORDER BY 1",
        &[&schema()],
    )
    .await
    .expect("index sizes")
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect()
}

fn total(sizes: &[(String, i64)]) -> i64 {
    sizes.iter().map(|(_, b)| b).sum()
}

async fn queue(url: &str, name: &str, rebuild: bool) -> PgQueue<Vec<u8>> {
    let options = common::options()
        .schema(schema())
        .vacuum_after_rows(0) // no upkeep by itself: the test runs it
        .rebuild_bloated_indexes(rebuild);
    common::open_bytes(
        url,
        name.to_string(),
        Config::new(Duration::from_secs(30)),
        options,
    )
    .await
}

#[test]
fn upkeep_rebuilds_bloated_indexes_and_drops_invalid_ones() {
    common::with_server(|url| async move {
        #[allow(non_snake_case)] // the schema as the SQL below names it
        let SCHEMA = schema();
        let db = common::sql(&url).await;
        common::drop_schema(&url, &SCHEMA.to_string()).await;
        let name = common::unique("upkeep");
        let q = queue(&url, &name, true).await;
        let vacuum_only = queue(&url, &name, false).await;

        // LIVE items waiting, then FLOW more through, LIVE left.
        q.push_batch((0..LIVE).map(|_| vec![7u8; 16]))
            .await
            .expect("push");
        let mut acked = 0;
        while acked < FLOW {
            q.push_batch((0..500).map(|_| vec![7u8; 16]))
                .await
                .expect("push");
            let mut got = 0;
            while got < 500 {
                let batch = q.receive_batch(500 - got).await;
                let n = batch.len();
                got += n;
                let done = q.ack_batch(batch).await;
                assert_eq!(done.accepted(), n, "{:?}", done.stale());
            }
            acked += 500;
        }
        let bloated = index_sizes(&db).await;

        // VACUUM alone: the index files keep their size.
        let done = vacuum_only.store().run_upkeep().await.expect("upkeep");
        assert_eq!((done.vacuums, done.indexes_rebuilt), (1, 0));
        let vacuumed = index_sizes(&db).await;
        assert_eq!(vacuumed, bloated, "VACUUM does not shrink an index");

        // A rebuild that failed midway leaves an invalid index named like REINDEX's own.
        let failed = db
            .batch_execute(&format!(
                "CREATE UNIQUE INDEX CONCURRENTLY items_claim_ccnew ON {SCHEMA}.items (queue)"
            ))
            .await;
        assert!(failed.is_err(), "the queue column is not unique");
        let invalid = format!(
            "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
             WHERE i.indrelid = '{SCHEMA}.items'::regclass AND NOT i.indisvalid"
        );
        let invalid = invalid.as_str();
        let count = |r: tokio_postgres::Row| r.get::<_, i64>(0);
        assert_eq!(count(db.query_one(invalid, &[]).await.expect("count")), 1);

        // The upkeep with rebuilds: every index back near a fresh build, the invalid gone.
        let done = q.store().run_upkeep().await.expect("upkeep");
        assert_eq!(done.vacuums, 1);
        assert!(done.indexes_rebuilt >= 1, "{done:?}");
        assert_eq!(count(db.query_one(invalid, &[]).await.expect("count")), 0);
        let kept = index_sizes(&db).await;
        // The test's own rebuild, for the fresh sizes: it takes the indexes' locks one by one
        // and may deadlock with the queues' background statements (the rescuer's); the
        // server then aborts one side, and the rebuild is tried again.
        for tries in 1.. {
            match db
                .batch_execute(&format!("REINDEX TABLE {SCHEMA}.items"))
                .await
            {
                Ok(()) => break,
                Err(e)
                    if tries < 5
                        && e.code()
                            == Some(&tokio_postgres::error::SqlState::T_R_DEADLOCK_DETECTED) => {}
                Err(e) => panic!("reindex: {e}"),
            }
        }
        let fresh = index_sizes(&db).await;
        println!("indexes: bloated {bloated:?}\n  after the upkeep {kept:?}\n  fresh {fresh:?}");
        assert!(
            total(&bloated) > 3 * total(&fresh),
            "the flow bloated the indexes: {bloated:?} against {fresh:?}"
        );
        let names =
            |sizes: &[(String, i64)]| sizes.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(names(&kept), names(&fresh), "the same indexes");
        for ((name, bytes), (_, fresh_bytes)) in kept.iter().zip(&fresh) {
            assert!(
                *bytes <= (*fresh_bytes * 2).max(256 * 1024),
                "{name}: {bytes} bytes after the upkeep, {fresh_bytes} fresh"
            );
        }
        let s = q.refresh_stats().await.expect("stats");
        assert_eq!(s.ready as usize, LIVE, "the upkeep lost no item");
        drop((q, vacuum_only));
        common::drop_schema(&url, &SCHEMA.to_string()).await;
    });
}
