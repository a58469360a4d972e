//! Handlers' checkpoints on the SQLite store (issue 19, part 4): on disk once `Ok`, kept
//! across nack, lease expiry, restart, dead letter and redrive, gone with the ack, refused
//! for a stale lease and past the size limit, shown to the operator; a version-1 file
//! migrated at open; a job killed with -9 at 60 % resumes from its checkpoint; a checkpoint
//! whose commit fails never answers `Ok` and lands once the file recovers.

mod support;

use std::time::Duration;

use leaseq_async::{CheckpointError, Config, Page, ReceiptError, MAX_PROGRESS_BYTES};
use leaseq_smol::SmolRuntime;
use leaseq_sqlite::{BytesCodec, Options, FORMAT_VERSION};
use support::{open_default, remove, temp, Queue};

/// The `progress` column of every row, by id.
fn progress_rows(path: &std::path::Path) -> Vec<(u64, Option<Vec<u8>>)> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut st = conn
        .prepare("SELECT id, progress FROM items ORDER BY id")
        .unwrap();
    st.query_map([], |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn open_short(path: &std::path::Path, visibility: Duration) -> Queue {
    smol::block_on(
        leaseq_async::LeaseQueue::builder(
            Config::new(visibility)
                .with_max_attempts(10)
                .with_backoff(leaseq_async::Backoff::None),
        )
        .runtime(SmolRuntime::global())
        .codec(BytesCodec)
        .open(leaseq_sqlite::Sqlite::file(path).options(Options::default())),
    )
    .unwrap()
}

#[test]
fn a_checkpoint_is_on_disk_and_survives_nack_expiry_restart_and_redrive() {
    let path = temp("progress-keep");
    let q = open_short(&path, Duration::from_millis(200));
    let id = smol::block_on(async {
        let id = q.push(b"job".to_vec()).await.unwrap();
        let mut d = q.receive().await.unwrap();
        assert!(d.progress().is_none());
        d.checkpoint(b"step 1".to_vec()).await.unwrap();
        // `Ok` means on disk: another connection reads it now.
        assert_eq!(
            progress_rows(&path),
            vec![(id.get(), Some(b"step 1".to_vec()))]
        );
        d.nack("flaky").await.unwrap();
        let mut d = q.receive().await.unwrap();
        assert_eq!(d.progress().unwrap().as_bytes(), b"step 1");
        d.checkpoint(b"step 2".to_vec()).await.unwrap();
        // The lease runs out; the next holder sees step 2, the old one is refused.
        smol::Timer::after(Duration::from_millis(300)).await;
        let d2 = q.receive().await.unwrap();
        assert_eq!(d2.progress().unwrap().as_bytes(), b"step 2");
        assert_eq!(
            d.checkpoint(b"stale".to_vec()).await,
            Err(CheckpointError::Stale(ReceiptError::Redelivered(id)))
        );
        assert_eq!(
            progress_rows(&path),
            vec![(id.get(), Some(b"step 2".to_vec()))],
            "the refused checkpoint wrote nothing"
        );
        d2.dead_letter("poison").await.unwrap();
        id
    });
    drop(q);

    // Restart: the dead letter's checkpoint is back, shown to the operator, and kept by a
    // redrive.
    let q = open_short(&path, Duration::from_secs(30));
    smol::block_on(async {
        let shown = q.checkpoints(Page::ALL).await.unwrap();
        assert_eq!(shown.len(), 1);
        assert_eq!((shown[0].0, shown[0].1.as_bytes()), (id, &b"step 2"[..]));
        q.redrive(id).await.unwrap();
        let mut d = q.receive().await.unwrap();
        assert_eq!(d.progress().unwrap().as_bytes(), b"step 2");
        let r = d.checkpoint(vec![0; MAX_PROGRESS_BYTES + 1]).await;
        assert!(matches!(r, Err(CheckpointError::TooLarge { .. })), "{r:?}");
        d.checkpoint(b"step 3".to_vec()).await.unwrap();
        drop(d);
    });
    drop(q);

    // A lease cut by the process's end: back with its checkpoint; acked, the row is gone.
    let q = open_default(&path).unwrap();
    smol::block_on(async {
        let d = q.receive().await.unwrap();
        assert_eq!(d.progress().unwrap().as_bytes(), b"step 3");
        d.ack().await.unwrap();
        assert!(q.checkpoints(Page::ALL).await.unwrap().is_empty());
    });
    drop(q);
    assert!(progress_rows(&path).is_empty());
    remove(&path);
}

/// A file of format 1 (before checkpoints) opens: its rows come back, the file is migrated
/// to the current format, and checkpoints work on it.
#[test]
fn a_version_1_file_is_migrated_at_open() {
    let path = temp("progress-v1");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "BEGIN;
             CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
             INSERT INTO meta VALUES ('magic', 'leaseq-sqlite'), ('next_id', 8);
             CREATE TABLE items (
                 id INTEGER PRIMARY KEY, payload BLOB NOT NULL, attempts INTEGER NOT NULL,
                 visible_at INTEGER NOT NULL, expires_at INTEGER, priority INTEGER NOT NULL,
                 key BLOB, leased INTEGER NOT NULL DEFAULT 0, last_error TEXT,
                 dead INTEGER NOT NULL DEFAULT 0, reason INTEGER, dead_at INTEGER
             );
             INSERT INTO items (id, payload, attempts, visible_at, priority, leased, dead)
                 VALUES (7, x'6f6c64', 1, 0, 0, 1, 0);
             PRAGMA application_id = 1280389169;
             PRAGMA user_version = 1;
             COMMIT;",
        )
        .unwrap();
    }
    assert!(leaseq_sqlite::check_file(&path).unwrap());
    let q = open_default(&path).unwrap();
    smol::block_on(async {
        let mut d = q.receive().await.unwrap();
        assert_eq!((d.id().get(), d.item().as_slice()), (7, &b"old"[..]));
        assert_eq!(d.attempt(), 2, "its cut lease counted");
        assert!(d.progress().is_none());
        d.checkpoint(b"resumed".to_vec()).await.unwrap();
    });
    drop(q);
    assert_eq!(support::user_version(&path), FORMAT_VERSION);
    assert_eq!(progress_rows(&path), vec![(7, Some(b"resumed".to_vec()))]);
    remove(&path);
}

/// The child of the kill -9 test: works through item "job" in 10 steps, checkpointing
/// after each; after step 6 it says so on stdout and hangs until killed.
#[test]
fn progress_kill9_child() {
    let Ok(path) = std::env::var("LEASEQ_PROGRESS_CHILD") else {
        return;
    };
    let q = open_default(std::path::Path::new(&path)).unwrap();
    smol::block_on(async {
        let mut d = q.receive().await.unwrap();
        let from = d.progress().map_or(0, |p| p.as_bytes()[0]);
        for step in from..10 {
            d.checkpoint(vec![step + 1]).await.unwrap();
            if step + 1 == 6 {
                println!("AT60");
                std::thread::sleep(Duration::from_secs(600));
            }
        }
    });
}

/// Issue 19: "a job killed with -9 at 60 % resumes from its checkpoint on redelivery".
#[test]
fn a_job_killed_with_sigkill_at_60_percent_resumes_from_its_checkpoint() {
    let path = temp("progress-kill9");
    let q = open_default(&path).unwrap();
    let id = smol::block_on(q.push(b"job".to_vec())).unwrap();
    drop(q);
    // Killed once it checkpointed step 6.
    let env = [("LEASEQ_PROGRESS_CHILD", &path)];
    leaseq_test_kit::child::kill_at("progress_kill9_child", &env, "AT60");

    let q = open_default(&path).unwrap();
    smol::block_on(async {
        let d = q.receive().await.unwrap();
        // At 60 %.
        leaseq_test_kit::steps::assert_resumes(&d, id, 2, &[6]);
        d.ack().await.unwrap();
    });
    drop(q);
    remove(&path);
}

/// A checkpoint whose commit fails (the file locked by another connection) answers
/// "outcome unknown", never `Ok`; it stays queued and lands once the file recovers.
#[test]
fn a_checkpoint_whose_commit_fails_is_outcome_unknown_then_lands() {
    let path = temp("progress-fail");
    let q = support::open_with(
        &path,
        Options::new()
            .commit_timeout(Duration::from_millis(300))
            .busy_timeout(Duration::from_millis(20)),
    )
    .unwrap();
    smol::block_on(async {
        let id = q.push(b"job".to_vec()).await.unwrap();
        let mut d = q.receive().await.unwrap();
        d.checkpoint(b"before".to_vec()).await.unwrap();
        let other = rusqlite::Connection::open(&path).unwrap();
        other.execute_batch("BEGIN IMMEDIATE;").unwrap();
        match d.checkpoint(b"during".to_vec()).await {
            Err(e @ CheckpointError::Store(_)) => assert!(e.is_outcome_unknown(), "{e:?}"),
            other => panic!("a checkpoint while commits fail: {other:?}"),
        }
        // Not on disk: the other connection still reads the one before.
        assert_eq!(
            other
                .query_row("SELECT progress FROM items", [], |r| r.get::<_, Vec<u8>>(0))
                .unwrap(),
            b"before"
        );
        other.execute_batch("ROLLBACK;").unwrap();
        q.store().sync().await.expect("the retry succeeded");
        assert_eq!(
            progress_rows(&path),
            vec![(id.get(), Some(b"during".to_vec()))]
        );
        d.ack().await.unwrap();
    });
    drop(q);
    remove(&path);
}

/// Seeded: a run of checkpoints with the disk filling up at a random one, then either the
/// space back or a crash (the writer halted) while commits fail. After a reopen the item's
/// checkpoint is the last one answered `Ok`, or one answered "outcome unknown" after it:
/// never an older one, never one that was refused, and every failure was typed.
#[cfg(feature = "fault-injection")]
#[test]
fn seeded_disk_full_and_crash_never_lose_a_checkpoint_answered_ok() {
    use leaseq_test_kit::rng::Rng;
    use support::{fill_disk, free_disk};
    let seeds = leaseq_test_kit::child::count("LEASEQ_PROGRESS_SEEDS", 4);
    for seed in 0..seeds {
        let mut rng = Rng(2026 + seed);
        let path = temp("progress-seeded");
        let options = || {
            Options::new()
                .commit_timeout(Duration::from_millis(200))
                .busy_timeout(Duration::from_millis(20))
        };
        let q = support::open_with(&path, options()).unwrap();
        let fail_at = 1 + rng.below(7) as u8;
        // Every other seed crashes while commits fail; the others get the space back.
        let crash = seed % 2 == 0;
        let (mut last_ok, mut unknown) = (None, Vec::new());
        smol::block_on(async {
            q.push(b"job".to_vec()).await.unwrap();
            let mut d = q.receive().await.unwrap();
            for step in 0..10u8 {
                if step == fail_at {
                    fill_disk(&q);
                }
                // A few KiB: each checkpoint needs pages of its own.
                let size = 2000 + rng.below(4000) as usize;
                match d.checkpoint(vec![step; size]).await {
                    Ok(()) => last_ok = Some(step),
                    Err(e) => {
                        assert!(e.is_outcome_unknown(), "seed {seed}, step {step}: {e:?}");
                        unknown.push(step);
                    }
                }
                if step == fail_at + 1 {
                    if crash {
                        break;
                    }
                    free_disk(&q);
                    q.store().sync().await.expect("recovered");
                }
            }
            if crash {
                // The process "dies" holding the lease.
                std::mem::forget(d);
            }
        });
        if crash {
            q.store().halt();
            std::mem::forget(q);
        } else {
            drop(q);
        }
        // The halted writer lets the file go once its retry's backoff ends.
        let started = std::time::Instant::now();
        let q = loop {
            match support::open_default(&path) {
                Err(leaseq_sqlite::OpenError::Locked(_))
                    if started.elapsed() < Duration::from_secs(10) =>
                {
                    std::thread::sleep(Duration::from_millis(20))
                }
                other => break other.unwrap(),
            }
        };
        smol::block_on(async {
            let d = q.receive().await.unwrap();
            let on_disk = d.progress().map(|p| p.as_bytes()[0]);
            let allowed = |s: u8| Some(s) == last_ok || unknown.contains(&s) && Some(s) > last_ok;
            assert!(
                on_disk.is_some_and(allowed) || (on_disk.is_none() && last_ok.is_none()),
                "seed {seed} (fail at {fail_at}, crash {crash}): on disk {on_disk:?}, last Ok \
                 {last_ok:?}, unknown {unknown:?}"
            );
            if !crash {
                assert_eq!(
                    on_disk,
                    Some(9),
                    "seed {seed}: recovered, the last one landed"
                );
            }
            eprintln!(
                "seed {seed}: disk full at {fail_at}, crash {crash}: last Ok {last_ok:?}, \
                 outcome unknown {unknown:?}, on disk after the reopen {on_disk:?}"
            );
            d.ack().await.unwrap();
        });
        drop(q);
        remove(&path);
    }
}

/// A pool on the durable store (fetcher and completer on): a blocking handler records a
/// checkpoint per step and fails at step 3 on its first attempt; the second handling
/// resumes there, and the ack removes the row with its checkpoint.
#[test]
fn a_blocking_pool_handler_resumes_from_its_checkpoint() {
    let path = temp("progress-pool");
    let q = open_short(&path, Duration::from_secs(30));
    let starts = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    smol::block_on(async {
        q.push(b"job".to_vec()).await.unwrap();
        let pool = leaseq_async::Pool::builder(q.clone())
            .workers(2)
            .spawn_blocking({
                let starts = starts.clone();
                move |job| {
                    let from = job.progress().map_or(0, |p| p.as_bytes()[0]);
                    starts.lock().unwrap().push(from);
                    for step in from..5 {
                        job.checkpoint_blocking(vec![step + 1])?;
                        if step + 1 == 3 && job.attempt == 1 {
                            return Err("cut off".into());
                        }
                    }
                    Ok(())
                }
            });
        q.wait_empty().await;
        let report = pool.shutdown(Duration::from_secs(30)).await;
        assert_eq!((report.stats.ok, report.stats.failed), (1, 1));
    });
    assert_eq!(*starts.lock().unwrap(), vec![0, 3]);
    drop(q);
    assert!(progress_rows(&path).is_empty());
    remove(&path);
}
