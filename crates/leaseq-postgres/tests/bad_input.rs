//! What `open` and `push` refuse, typed, and what a bad row in the table becomes: an
//! unreachable server, a bad URL, a schema of a newer leaseq (left untouched), invalid
//! names, a capacity, undecodable bytes (a dead letter, never a delivery), pushes asking for
//! what the store cannot do; and migrations that run once however many open at once.

use leaseq_test_kit::pg as common;

use common::*;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leaseq_async::{Codec, CodecError, Config, Push, PushError};
use leaseq_postgres::{
    migrate, schema_version, BytesCodec, OpenError, Options, PgQueue, MAX_QUEUE_NAME,
    SCHEMA_VERSION,
};

fn config() -> Config {
    Config::new(Duration::from_secs(30))
}

async fn open_bytes(
    url: &str,
    queue: &str,
    options: Options,
) -> Result<PgQueue<Vec<u8>>, OpenError> {
    common::try_open::<Vec<u8>, _>(url, queue.to_string(), config(), BytesCodec, options).await
}

/// Needs no server: it runs on every machine.
#[test]
fn unreachable_server_is_typed_unreachable() {
    common::runtime().block_on(async {
        for url in [
            "host=127.0.0.1 port=1 user=postgres dbname=test",
            // Not routed anywhere: only the connect timeout ends the wait.
            "host=10.255.255.1 port=5432 user=postgres dbname=test",
        ] {
            let options = options().connect_timeout(Duration::from_millis(500));
            let r = open_bytes(url, "unreachable", options).await;
            assert!(
                matches!(r, Err(OpenError::Unreachable { .. })),
                "{url}: {r:?}"
            );
        }
    });
}

#[test]
fn bad_url_bad_names_and_capacity_are_refused() {
    common::with_server(|url| async move {
        for bad in ["host=127.0.0.1 port=notaport", "postgresql://[::1"] {
            let r = open_bytes(bad, "q", options()).await;
            assert!(matches!(r, Err(OpenError::BadUrl(_))), "{bad}: {r:?}");
        }
        for schema in ["Leaseq", "lease-q", "1leaseq", "", &"s".repeat(64)] {
            let r = open_bytes(&url, "q", options().schema(schema)).await;
            assert!(
                matches!(&r, Err(OpenError::InvalidName(n)) if n == schema),
                "{schema:?}: {r:?}"
            );
        }
        let too_long = "q".repeat(MAX_QUEUE_NAME + 1);
        for queue in ["", too_long.as_str()] {
            let r = open_bytes(&url, queue, options()).await;
            assert!(
                matches!(r, Err(OpenError::InvalidName(_))),
                "{queue:?}: {r:?}"
            );
        }
        let longest = format!("{}{}", common::unique("q"), "q".repeat(MAX_QUEUE_NAME));
        let longest = &longest[..MAX_QUEUE_NAME];
        open_bytes(&url, longest, options())
            .await
            .expect("a queue name of exactly the longest length");
        let r = common::try_open::<Vec<u8>, _>(
            &url,
            "q",
            Config::new(Duration::ZERO),
            BytesCodec,
            options(),
        )
        .await;
        assert!(matches!(r, Err(OpenError::Config(_))), "{r:?}");
    });
}

#[test]
fn schema_of_a_newer_leaseq_is_refused_untouched() {
    common::with_server(|url| async move {
        let s = common::scratch_schema("too_new");
        let db = sql(&url).await;
        db.batch_execute(&format!(
            "CREATE SCHEMA {s};
             CREATE TABLE {s}.leaseq_meta (key text PRIMARY KEY, value bigint NOT NULL);
             INSERT INTO {s}.leaseq_meta VALUES ('schema_version', 999);"
        ))
        .await
        .expect("set up a schema from the future");
        let r = open_bytes(&url, "q", options().schema(&s)).await;
        match r {
            Err(OpenError::SchemaTooNew { found, supported }) => {
                assert_eq!((found, supported), (999, SCHEMA_VERSION));
            }
            other => panic!("expected SchemaTooNew, got {other:?}"),
        }
        assert_eq!(schema_version(&db, &s).await.expect("version"), Some(999));
        let tables: Vec<String> = db
            .query(
                "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname = $1 ORDER BY 1",
                &[&s],
            )
            .await
            .expect("list relations")
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(
            tables,
            ["leaseq_meta", "leaseq_meta_pkey"],
            "nothing created or changed"
        );
        common::drop_schema(&url, &s).await;
    });
}

#[test]
fn migration_is_idempotent_and_concurrent_opens_all_succeed() {
    common::with_server(|url| async move {
        let s = common::scratch_schema("fresh");
        let opens: Vec<_> = (0..8)
            .map(|i| {
                let (url, s) = (url.clone(), s.clone());
                tokio::spawn(async move {
                    let options = options().schema(&s).pool_size(2);
                    open_bytes(&url, &format!("q{i}"), options).await
                })
            })
            .collect();
        let mut queues = Vec::new();
        for o in opens {
            let r = o.await.expect("task");
            queues.push(r.unwrap_or_else(|e| panic!("a concurrent open failed: {e}")));
        }
        // Two are enough to use (the server's connections are shared with other tests).
        queues.truncate(2);
        let mut db = sql(&url).await;
        assert_eq!(
            schema_version(&db, &s).await.expect("version"),
            Some(SCHEMA_VERSION)
        );
        migrate(&mut db, &s).await.expect("migrating again");
        migrate(&mut db, &s).await.expect("and again");
        assert_eq!(
            schema_version(&db, &s).await.expect("version"),
            Some(SCHEMA_VERSION)
        );
        // They work, and each sees only its own items.
        for (i, q) in queues.iter().enumerate() {
            q.push(vec![i as u8]).await.expect("push");
        }
        for (i, q) in queues.iter().enumerate() {
            let d = q.receive_timeout(PATIENCE).await.expect("receive");
            assert_eq!(d.item(), &vec![i as u8]);
            d.ack().await.expect("ack");
        }
        drop(queues);
        common::drop_schema(&url, &s).await;
    });
}

/// A `u32` as exactly four little-endian bytes; anything else does not decode.
struct Exact4;

impl Codec<u32> for Exact4 {
    fn encode(&self, item: &u32) -> Result<Vec<u8>, CodecError> {
        Ok(item.to_le_bytes().to_vec())
    }
    fn decode(&self, bytes: &[u8]) -> Result<u32, CodecError> {
        let b: [u8; 4] = bytes
            .try_into()
            .map_err(|_| CodecError(format!("need exactly 4 bytes, got {}", bytes.len())))?;
        Ok(u32::from_le_bytes(b))
    }
}

#[test]
fn undecodable_row_becomes_a_dead_letter_and_the_rest_flows() {
    common::with_server(|url| async move {
        let name = common::unique("undecodable");
        let q = common::open::<u32, _>(&url, name.to_string(), config(), Exact4, options()).await;
        let db = sql(&url).await;
        q.push(1).await.expect("push");
        q.push(2).await.expect("push");
        // Garbage in the table, between the good items (an id no store hands out).
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let bad_id = -((nanos % (1 << 62)) as i64) - 1;
        db.execute(
            &format!(
                "INSERT INTO {SCHEMA}.items (id, queue, visible_at, payload)
                 VALUES ($1, $2, clock_timestamp(), $3)"
            ),
            &[&bad_id, &name, &b"garbage".as_slice()],
        )
        .await
        .expect("insert garbage");
        q.push(3).await.expect("push");
        q.push(4).await.expect("push");

        let mut got = Vec::new();
        for _ in 0..4 {
            let d = q.receive_timeout(PATIENCE).await.expect("a good item");
            got.push(*d.item());
            d.ack().await.expect("ack");
        }
        assert_eq!(
            got,
            [1, 2, 3, 4],
            "the good items, in order, around the bad one"
        );
        let (id, error) = common::one_undecodable_dead_letter(&q).await;
        assert_eq!(id as i64, bad_id);
        assert!(error.contains("need exactly 4 bytes, got 7"), "{error:?}");
    });
}

#[test]
fn pushes_asking_for_too_much_are_refused_with_the_item() {
    common::with_server(|url| async move {
        let q = open_bytes(&url, &common::unique("bad-push"), options())
            .await
            .expect("open");
        let item = || b"item".to_vec();
        // Longer than any key: still a key, refused (never pushed keyless).
        match q.try_push_with(item(), Push::new().key([b'k'; 65])) {
            Err(PushError::KeyTooLong { item: back, len }) => {
                assert_eq!(back, item());
                assert!(len > leaseq_async::core::UniqueKey::MAX_LEN, "{len}");
            }
            other => panic!("expected KeyTooLong, got {other:?}"),
        }
        match q.push_with(item(), Push::new().priority(8)).await {
            Err(PushError::PriorityOutOfRange { item: back, level }) => {
                assert_eq!((back, level), (item(), 8));
            }
            other => panic!("expected PriorityOutOfRange, got {other:?}"),
        }
        for (delay, ttl) in [(0, 0), (500, 500), (500, 100)] {
            let push = Push::new()
                .delay(Duration::from_millis(delay))
                .ttl(Duration::from_millis(ttl));
            match q.try_push_with(item(), push) {
                Err(PushError::AlreadyExpired(back)) => assert_eq!(back, item()),
                other => panic!("delay {delay} ttl {ttl}: expected AlreadyExpired, got {other:?}"),
            }
        }
        let s = q.refresh_stats().await.expect("stats");
        assert_eq!((s.live(), s.pushed), (0, 0), "nothing was queued");
    });
}
