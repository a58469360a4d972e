//! Pause and resume on the queue file: the flag is in the file (format 5), so a queue paused
//! by one process is still paused for the next owner and shown by `FileView`; a pool of
//! the owning process stops taking items at the pause and starts again at the resume; pushes
//! while paused are kept; a format-3 file is migrated and reads as running.

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use leaseq_async::{Job, Pool};
use leaseq_sqlite::{FileView, FORMAT_VERSION};

/// Lets go of the file as an exiting process would: the store (its writer, the file and
/// the owner lock) goes once its driver lets go of it; its drop waits for the writer.
fn release(q: support::Queue) {
    let store = q.store().clone();
    drop(q);
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while Arc::strong_count(&store) > 1 && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(store);
}

/// The child: owns the file after the parent, finds it paused with everything kept, and
/// resumes it.
#[test]
fn pause_child() {
    let Ok(path) = std::env::var("LEASEQ_PAUSE_FILE") else {
        return;
    };
    let q = support::open_default(std::path::Path::new(&path)).unwrap();
    smol::block_on(async {
        let s = q.stats();
        assert!(s.paused, "still paused in the next process: {s:?}");
        assert_eq!(s.ready, 4, "{s:?}");
        assert!(q.try_receive().is_none());
        assert_eq!(q.resume().await, Ok(true));
        q.close().await.unwrap();
    });
    println!("CHILD RESUMED");
}

#[test]
fn a_pause_is_kept_in_the_file_for_the_next_process() {
    let path = support::temp("pause-file");
    let q = support::open_default(&path).unwrap();
    smol::block_on(async {
        for n in 0..3u8 {
            q.push(vec![n]).await.unwrap();
        }
        let held = q.try_receive().unwrap();
        assert_eq!(q.pause().await, Ok(true));
        assert_eq!(q.pause().await, Ok(false), "already paused");
        q.push(vec![3]).await.unwrap();
        q.push(vec![4]).await.unwrap();
        assert!(q.try_receive().is_none() && q.try_receive_batch(8).is_empty());
        // The lease out when it paused settles as usual.
        held.ack().await.unwrap();
        assert_eq!((q.stats().ready, q.stats().acked), (4, 1));
        q.close().await.unwrap();
    });
    release(q);
    let counts = FileView::open(&path).unwrap().counts().unwrap();
    assert!(counts.paused && counts.ready == 4, "{counts:?}");

    let (status, out) = support::run_child(
        "pause_child",
        &[("LEASEQ_PAUSE_FILE", path.display().to_string())],
        None,
    );
    assert!(status.success() && out.contains("CHILD RESUMED"), "{out}");

    assert!(!FileView::open(&path).unwrap().counts().unwrap().paused);
    let q = support::open_default(&path).unwrap();
    smol::block_on(async {
        assert!(!q.stats().paused);
        let items: Vec<u8> = q
            .try_receive_batch(8)
            .into_iter()
            .map(|d| d.item()[0])
            .collect();
        assert_eq!(items, [1, 2, 3, 4]);
        q.close().await.unwrap();
    });
    release(q);
    support::remove(&path);
}

#[test]
fn a_pool_stops_at_the_pause_and_starts_again_at_the_resume() {
    let path = support::temp("pause-pool");
    let q = support::open_default(&path).unwrap();
    smol::block_on(async {
        for n in 0..200u32 {
            q.push(n.to_be_bytes().to_vec()).await.unwrap();
        }
        let done = Arc::new(AtomicU64::new(0));
        let workers = 2;
        // After the first 10 items the handlers wait for this gate (its sender's drop), so
        // that the pool is still running when the queue is paused.
        let (gate, gated) = smol::channel::unbounded::<()>();
        let pool = Pool::builder(q.clone()).workers(workers).spawn({
            let done = done.clone();
            move |_job: Job<Vec<u8>>| {
                let (done, gated) = (done.clone(), gated.clone());
                async move {
                    if done.load(Ordering::Relaxed) >= 10 {
                        let _ = gated.recv().await;
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                }
            }
        });
        while done.load(Ordering::Relaxed) < 10 {
            smol::Timer::after(Duration::from_millis(1)).await;
        }
        q.pause().await.unwrap();
        // From the pause on, no lease is handed out: the leases already out (the workers'
        // and the fetcher's, taken ahead) are handled, and then nothing.
        let delivered = q.stats().delivered;
        drop(gate);
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while done.load(Ordering::Relaxed) < delivered {
            assert!(
                std::time::Instant::now() < until,
                "the leases out are handled"
            );
            smol::Timer::after(Duration::from_millis(1)).await;
        }
        smol::Timer::after(Duration::from_millis(200)).await;
        let handled = done.load(Ordering::Relaxed);
        assert_eq!(
            (q.stats().delivered, handled),
            (delivered, delivered),
            "nothing leased since the pause"
        );
        assert!(handled < 200, "{handled}");
        q.resume().await.unwrap();
        while done.load(Ordering::Relaxed) < 200 {
            smol::Timer::after(Duration::from_millis(1)).await;
        }
        let report = pool.shutdown(Duration::from_secs(5)).await;
        assert_eq!(report.stats.ok, 200);
        q.close().await.unwrap();
    });
    release(q);
    support::remove(&path);
}

#[test]
fn a_format_3_file_is_migrated_and_reads_as_running() {
    let path = support::temp("pause-v3");
    release(support::open_default(&path).unwrap());
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "{} PRAGMA user_version = 3;",
            support::BEFORE_FLOW
        ))
        .unwrap();
    }
    assert!(!FileView::open(&path).unwrap().counts().unwrap().paused);
    let q = support::open_default(&path).unwrap();
    smol::block_on(async {
        assert!(!q.stats().paused);
        q.pause().await.unwrap();
        q.close().await.unwrap();
    });
    release(q);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, FORMAT_VERSION);
    drop(conn);
    assert!(FileView::open(&path).unwrap().counts().unwrap().paused);
    support::remove(&path);
}
