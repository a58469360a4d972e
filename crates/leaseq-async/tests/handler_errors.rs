//! What pool handlers may return: `?` on any error (std, boxed, anyhow), permanent errors,
//! panics with their own reason, and latency histograms that only time runs that ended by
//! themselves. Virtual time.

use std::time::Duration;

use leaseq_async::{Config, ItemTimeout, JobError, LeaseQueue, Pool, Reason, Runtime};
use leaseq_test_kit::sim;

#[derive(Debug)]
struct Root;

impl std::fmt::Display for Root {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("disk full")
    }
}

impl std::error::Error for Root {}

#[derive(Debug)]
struct Outer(Root);

impl std::fmt::Display for Outer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("writing thumbnail")
    }
}

impl std::error::Error for Outer {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

fn io_fails() -> Result<(), std::io::Error> {
    Err(std::io::Error::other("connection reset"))
}

fn boxed_fails() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    Err("bad header".into())
}

fn anyhow_fails() -> anyhow::Result<()> {
    Err(anyhow::Error::new(Root).context("resizing"))
}

fn chained_fails() -> Result<(), Outer> {
    Err(Outer(Root))
}

/// `?` works on every kind of error inside a handler, and the dead letter keeps the whole
/// chain of causes as its last error.
#[test]
fn question_mark_on_any_error_in_a_handler() {
    sim::run(|rt| async move {
        let config = Config::new(Duration::from_secs(1)).with_max_attempts(1);
        let q = LeaseQueue::with_runtime(rt, config).unwrap();
        for n in 0..5u32 {
            q.try_push(n).unwrap();
        }
        let pool = Pool::builder(q.clone()).workers(1).spawn(|job| async move {
            match job.item {
                0 => io_fails()?,
                1 => boxed_fails()?,
                2 => anyhow_fails()?,
                3 => chained_fails()?,
                _ => return Err(JobError::permanent("unreadable")),
            }
            Ok(())
        });
        q.wait_empty().await;
        let report = pool.shutdown(Duration::from_secs(1)).await;
        assert_eq!((report.stats.failed, report.stats.permanent), (4, 1));
        let errors: Vec<(Reason, Option<String>)> = q
            .store()
            .take_dead_letters()
            .into_iter()
            .map(|d| (d.reason, d.last_error))
            .collect();
        let expected = [
            (Reason::Nacked, "connection reset"),
            (Reason::Nacked, "bad header"),
            (Reason::Nacked, "resizing: disk full"),
            (Reason::Nacked, "writing thumbnail: disk full"),
            (Reason::Rejected, "unreadable"),
        ];
        for ((reason, error), (want_reason, want_error)) in errors.iter().zip(expected) {
            assert_eq!((*reason, error.as_deref()), (want_reason, Some(want_error)));
        }
    });
}

/// A panicking handler's item is dead-lettered with `Reason::Panicked` and the panic's
/// message; panicked and timed-out runs are counted but kept out of the latency histogram,
/// so the suggested timeout reflects only runs that ended by themselves.
#[test]
fn panics_and_timeouts_stay_out_of_the_histograms() {
    sim::run(|rt| async move {
        let config = Config::new(Duration::from_secs(10)).with_max_attempts(1);
        let q = LeaseQueue::with_runtime(rt.clone(), config).unwrap();
        for n in 0..30u32 {
            q.try_push(n).unwrap();
        }
        let pool = Pool::builder(q.clone())
            .workers(1)
            .item_timeout(ItemTimeout::Fixed(Duration::from_secs(2)))
            .spawn({
                let rt = rt.clone();
                move |job| {
                    let rt = rt.clone();
                    async move {
                        // Every run takes 10 ms, then: 10 ok, 10 panic, 10 hang.
                        let t = rt.now().saturating_add(Duration::from_millis(10));
                        rt.sleep_until(t).await;
                        match job.item % 3 {
                            0 => Ok(()),
                            1 => panic!("thumbnail {} is corrupt", job.item),
                            _ => std::future::pending().await,
                        }
                    }
                }
            });
        q.wait_empty().await;
        let hist = pool.histograms();
        let report = pool.shutdown(Duration::from_secs(1)).await;
        let s = &report.stats;
        assert_eq!((s.ok, s.panicked, s.timed_out), (10, 10, 10), "{s:?}");
        let (_, h) = hist.iter().find(|(t, _)| *t == "item").expect("one type");
        assert_eq!(h.count(), 10, "only the ok runs are timed");
        let p99 = h.quantile(0.99).expect("samples");
        assert!(p99 < Duration::from_millis(11), "p99 {p99:?}");
        let dead = q.store().take_dead_letters();
        let panicked: Vec<_> = dead
            .iter()
            .filter(|d| d.reason == Reason::Panicked)
            .collect();
        assert_eq!(panicked.len(), 10);
        assert_eq!(
            panicked[0].last_error.as_deref(),
            Some("thumbnail 1 is corrupt")
        );
    });
}
