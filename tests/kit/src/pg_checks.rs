//! Checks of a Postgres queue's end state that several of its tests make.

use std::time::Duration;

use leaseq_async::{Page, Reason, ReceiveError};
use leaseq_postgres::PgQueue;

/// Asserts that nothing comes from `q` within 400 ms.
pub async fn nothing_comes<T: Clone + Send + Sync + 'static>(q: &PgQueue<T>) {
    assert!(matches!(
        q.receive_timeout(Duration::from_millis(400)).await,
        Err(ReceiveError::Timeout)
    ));
}

/// Asserts that nothing more comes from `q` and that it holds one dead letter: an item
/// that could not be decoded (its item not loaded by the listing either), counted in the
/// stats. Returns its id and its last error.
pub async fn one_undecodable_dead_letter<T: Clone + Send + Sync + 'static>(
    q: &PgQueue<T>,
) -> (u64, String) {
    nothing_comes(q).await;
    let dead = q.dead_letters(Page::first(10)).await.expect("dead letters");
    assert_eq!(
        dead.len(),
        1,
        "{:?}",
        dead.iter().map(|d| (d.id, d.reason)).collect::<Vec<_>>()
    );
    assert_eq!(dead[0].reason, Reason::Undecodable);
    assert!(dead[0].item.is_err(), "the listing does not load it either");
    assert_eq!(q.stats().dead_lettered, 1);
    let error = dead[0].last_error.clone().unwrap_or_default();
    (dead[0].id.get(), error)
}

/// Whether `gone_keys` keeps `key` of `queue` now (a windowed key held past its item).
pub async fn kept_key(db: &tokio_postgres::Client, queue: &str, key: &str) -> bool {
    db.query_one(
        &format!(
            "SELECT EXISTS (SELECT 1 FROM {}.gone_keys
                            WHERE queue = $1 AND key = $2 AND until > clock_timestamp())",
            crate::pg::SCHEMA
        ),
        &[&queue, &key.as_bytes()],
    )
    .await
    .expect("read gone_keys")
    .get(0)
}

/// How many keys `gone_keys` holds for `queue`, ended or not.
pub async fn kept_keys(db: &tokio_postgres::Client, queue: &str) -> i64 {
    db.query_one(
        &format!(
            "SELECT count(*) FROM {}.gone_keys WHERE queue = $1",
            crate::pg::SCHEMA
        ),
        &[&queue],
    )
    .await
    .expect("count gone_keys")
    .get(0)
}
