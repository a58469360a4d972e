//! The durable store: round trip, restart, crash, foreign files, a poison item that aborts
//! its process.

use std::path::PathBuf;
use std::time::Duration;

use leaseq_async::{Config, Push, Reason, Store};
use leaseq_smol::SmolRuntime;
use leaseq_sqlite::{BytesCodec, OpenError, Options, PostcardCodec, SqliteQueue};
use leaseq_test_kit::sqlite::{self, remove, temp, BytesQueue};

fn config() -> Config {
    Config::new(Duration::from_secs(30)).with_max_attempts(3)
}

/// Opens `path` with the default options, bytes as items.
fn open_default(path: &std::path::Path) -> Result<BytesQueue, OpenError> {
    sqlite::open_with(path, config(), BytesCodec, Options::default())
}

fn queue(path: &std::path::Path) -> SqliteQueue<String, SmolRuntime, PostcardCodec> {
    sqlite::open(path, config(), PostcardCodec)
}

/// Nacks `d` ("boom") to come back at once, no backoff.
async fn nack_at_once<T, S: Store<T, Runtime = SmolRuntime>>(
    d: leaseq_async::Delivery<T, SmolRuntime, S>,
) {
    let failure = leaseq_async::Failure::error("boom").retry_after(Duration::ZERO);
    d.nack_with(failure).await.unwrap();
}

#[test]
fn round_trip_push_receive_ack_nack_dead_letter_redrive() {
    let path = temp("round");
    smol::block_on(async {
        let q = queue(&path);
        let a = q.push("a".to_string()).await.unwrap();
        let b = q.push("b".to_string()).await.unwrap();
        let d = q.receive().await.unwrap();
        assert_eq!((d.id(), d.attempt(), d.item().as_str()), (a, 1, "a"));
        d.ack().await.unwrap();
        let d = q.receive().await.unwrap();
        assert_eq!(d.id(), b);
        nack_at_once(d).await;
        let d = q.receive().await.unwrap();
        assert_eq!((d.id(), d.attempt()), (b, 2));
        assert_eq!(d.dead_letter("poison").await.unwrap(), 2);
        let dead = q.store().memory().dead_letters();
        assert_eq!(dead.len(), 1);
        assert_eq!(dead[0].reason, Reason::Rejected);
        assert_eq!(dead[0].last_error.as_deref(), Some("poison"));
        q.store().redrive(b).await.unwrap();
        let d = q.receive().await.unwrap();
        assert_eq!((d.id(), d.attempt()), (b, 1));
        d.ack().await.unwrap();
        let s = q.stats();
        assert_eq!((s.acked, s.ready, s.dead), (2, 0, 0));
        assert!(q.store().commits() > 0);
        assert!(!q.store().journal_failed());
    });
    remove(&path);
}

#[test]
fn restart_keeps_items_attempts_dead_letters_and_delays() {
    let path = temp("restart");
    let (a, later, poison);
    {
        let path = path.clone();
        (a, later, poison) = smol::block_on(async move {
            let q = queue(&path);
            let a = q.push("a".to_string()).await.unwrap();
            let later = q
                .push_with(
                    "later".to_string(),
                    Push::new().delay(Duration::from_secs(3600)),
                )
                .await
                .unwrap();
            let poison = q.push("poison".to_string()).await.unwrap();
            let d = q.receive().await.unwrap();
            assert_eq!(d.id(), a);
            nack_at_once(d).await;
            let d = q.receive().await.unwrap();
            assert_eq!(d.id(), poison);
            d.dead_letter("bad input").await.unwrap();
            (a, later, poison)
        });
    }
    smol::block_on(async {
        let q = queue(&path);
        let s = q.stats();
        assert_eq!((s.ready, s.delayed, s.dead), (1, 1, 1), "{s:?}");
        // Reloaded, not pushed by this run.
        assert_eq!((s.pushed, s.restored, s.restored_dead), (0, 2, 1), "{s:?}");
        let dead = q.store().memory().dead_letters();
        assert_eq!(dead[0].id, poison);
        assert_eq!(dead[0].reason, Reason::Rejected);
        assert_eq!(dead[0].last_error.as_deref(), Some("bad input"));
        let d = q.receive().await.unwrap();
        assert_eq!((d.id(), d.attempt()), (a, 2));
        d.ack().await.unwrap();
        // The delayed item keeps its schedule (an hour), the dead letter can be redriven.
        assert!(q.receive_timeout(Duration::from_millis(50)).await.is_err());
        q.store().redrive(poison).await.unwrap();
        let d = q.receive().await.unwrap();
        assert_eq!((d.id(), d.attempt()), (poison, 1));
        d.ack().await.unwrap();
        // Ids are never reused.
        let next = q.push("new".to_string()).await.unwrap();
        assert!(next > later);
        assert_eq!(q.stats().delayed, 1);
    });
    remove(&path);
}

#[cfg(feature = "fault-injection")]
#[test]
fn leases_held_at_a_crash_come_back_with_their_attempt_counted() {
    let path = temp("crash");
    let id = smol::block_on(async {
        let q = queue(&path);
        let id = q.push("x".to_string()).await.unwrap();
        let d = q.receive().await.unwrap();
        assert_eq!(d.attempt(), 1);
        // The process "dies": nothing is settled, nothing is dropped, the writer stops as
        // a crash would (releasing the file's lock, as the OS does for a dead process).
        sqlite::crash(q, d);
        id
    });
    smol::block_on(async {
        let q = queue(&path);
        let d = q
            .receive_timeout(Duration::from_secs(1))
            .await
            .expect("the lease came back at once");
        assert_eq!((d.id(), d.attempt()), (id, 2));
        sqlite::crash(q, d);
    });
    smol::block_on(async {
        let q = queue(&path);
        let d = q.receive().await.unwrap();
        assert_eq!(d.attempt(), 3);
        sqlite::crash(q, d);
    });
    // Its last attempt was cut by a crash: a dead letter, "process restart".
    smol::block_on(async {
        let q = queue(&path);
        let dead = q.store().memory().dead_letters();
        assert_eq!(dead.len(), 1, "{:?}", q.stats());
        assert_eq!((dead[0].id, dead[0].attempts), (id, 3));
        assert_eq!(dead[0].reason, Reason::Dropped);
        assert_eq!(dead[0].last_error.as_deref(), Some("process restart"));
    });
    remove(&path);
}

#[test]
fn foreign_corrupt_and_newer_files_are_refused_untouched() {
    // Not SQLite at all.
    let path = temp("foreign");
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i * 31 % 251) as u8).collect();
    std::fs::write(&path, &garbage).unwrap();
    let r = open_default(&path);
    assert!(matches!(r, Err(OpenError::NotAQueue(_))), "{r:?}");
    assert_eq!(std::fs::read(&path).unwrap(), garbage);
    remove(&path);

    // Another application's SQLite database.
    let path = temp("other-app");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let r = open_default(&path);
    assert!(matches!(r, Err(OpenError::NotAQueue(_))), "{r:?}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    remove(&path);

    // A queue written by a newer format version.
    let path = temp("newer");
    smol::block_on(async {
        let q = open_default(&path).unwrap();
        q.push(b"x".to_vec()).await.unwrap();
    });
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA user_version = 99; PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;").unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let r = open_default(&path);
    assert!(
        matches!(
            r,
            Err(OpenError::NewerVersion {
                found: 99,
                supported: leaseq_sqlite::FORMAT_VERSION,
                ..
            })
        ),
        "{r:?}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    remove(&path);
}

/// The child's part of `poison_item_that_aborts_the_process_is_dead_lettered`: takes the
/// item and aborts, as a handler that crashes the process would; ends normally when the
/// queue holds nothing live (the item became a dead letter when it opened). Its wait has no
/// short timeout: a slow disk must not turn into a timed-out receive that hands the lease
/// back, which would be a different story than the one this test tells.
#[test]
fn poison_child() {
    let Ok(path) = std::env::var("LEASEQ_POISON_CHILD") else {
        return;
    };
    smol::block_on(async {
        let q = queue(&PathBuf::from(path));
        if q.stats().live() == 0 {
            return;
        }
        match q.receive_timeout(Duration::from_secs(60)).await {
            Ok(_) => std::process::abort(),
            Err(e) => panic!("nothing came in a minute: {e:?}"),
        }
    });
}

#[test]
fn poison_item_that_aborts_the_process_is_dead_lettered() {
    let path = temp("poison");
    let id = smol::block_on(async {
        let q = queue(&path);
        q.push("crash me".to_string()).await.unwrap()
    });
    let exe = std::env::current_exe().unwrap();
    let mut runs = Vec::new();
    for run in 0..6 {
        let log = PathBuf::from(format!("{}.child{run}.log", path.display()));
        let status = std::process::Command::new(&exe)
            .args(["--exact", "poison_child", "--test-threads=1", "--nocapture"])
            .env("LEASEQ_POISON_CHILD", &path)
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .status()
            .unwrap();
        let stderr = std::fs::read_to_string(&log).unwrap_or_default();
        drop(std::fs::remove_file(&log));
        let done = status.success();
        runs.push((status, stderr));
        if done {
            break;
        }
    }
    // Each crash was a delivery whose attempt was on disk before it was handed out; the
    // fourth run found the item dead-lettered when it opened.
    let aborted = runs
        .iter()
        .filter(|(s, _)| std::os::unix::process::ExitStatusExt::signal(s) == Some(6))
        .count();
    assert!(
        aborted == 3 && runs.len() == 4,
        "the children, in order: {runs:#?}"
    );
    smol::block_on(async {
        let q = queue(&path);
        let dead = q.store().memory().dead_letters();
        assert_eq!(dead.len(), 1);
        assert_eq!((dead[0].id, dead[0].attempts), (id, 3));
        assert_eq!(dead[0].reason, Reason::Dropped);
        assert_eq!(dead[0].last_error.as_deref(), Some("process restart"));
        assert_eq!(q.stats().live(), 0);
        q.store().synced().await.expect("committed");
    });
    remove(&path);
}

/// Steady push/ack: acked rows are deleted, their pages reused, the WAL checkpointed; the
/// file stays near the size of its live items, not its history. Prints its figures.
#[test]
fn file_does_not_grow_with_history() {
    let path = temp("compaction");
    let size = |p: &PathBuf| {
        let wal = PathBuf::from(format!("{}-wal", p.display()));
        std::fs::metadata(p).map_or(0, |m| m.len()) + std::fs::metadata(wal).map_or(0, |m| m.len())
    };
    let payload = vec![7u8; 200];
    let (few, many);
    {
        let q = open_default(&path).unwrap();
        smol::block_on(async {
            for round in 0..20 {
                for _ in 0..1000 {
                    q.try_push(payload.clone()).unwrap();
                }
                for d in q.receive_batch(1000).await {
                    d.ack().await.unwrap();
                }
                if round == 1 {
                    q.store().sync().await.unwrap();
                }
            }
            q.store().sync().await.unwrap();
        });
        few = size(&path);
        drop(q);
    }
    let after_close = size(&path);
    {
        let q = open_default(&path).unwrap();
        assert_eq!(q.stats().live(), 0);
        smol::block_on(async {
            for _ in 0..20_000 {
                q.try_push(payload.clone()).unwrap();
            }
            q.store().sync().await.unwrap();
        });
        many = size(&path);
    }
    println!(
        "20,000 items pushed and acked: file + WAL {few} bytes ({after_close} after close); \
         20,000 live items: {many} bytes"
    );
    assert!(after_close * 2 < many, "{after_close} vs {many}");
    remove(&path);
}
