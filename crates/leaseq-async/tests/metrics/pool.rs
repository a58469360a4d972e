//! A pool's metrics add up to its stats; every metric described; the paused gauge and the
//! oldest ready age.

use super::*;

/// A pool's handled counts and handling times, by type and outcome, add up to its stats;
/// the queue's dead letters by reason tell timeouts, panics and permanent errors apart.
#[test]
fn pool_metrics_add_up_to_the_pool_stats() {
    let recorder = Recorder::new();
    recorder.run(|rt, scraper| async move {
        let q = named(&rt, "jobs", Config::new(5 * SECOND).with_max_attempts(2));
        for n in 0..50 {
            q.try_push(n).unwrap();
        }
        let pool = Pool::builder(q.clone())
            .workers(3)
            .item_type(|n: &u32| if n % 2 == 0 { "even" } else { "odd" })
            .item_timeout(ItemTimeout::Fixed(SECOND))
            .spawn({
                let rt = rt.clone();
                move |job| {
                    let rt = rt.clone();
                    async move {
                        let took = match job.item % 10 {
                            2 => 3 * SECOND, // times out at every attempt
                            _ => Duration::from_millis(10),
                        };
                        sleep(&rt, took).await;
                        match job.item % 10 {
                            0 => Err(JobError::permanent("bad input")),
                            1 => Err(JobError::retry("always fails")),
                            3 if job.attempt == 1 => panic!("first attempt"),
                            5 if job.attempt == 1 => Err(JobError::retry("once")),
                            _ => Ok(()),
                        }
                    }
                }
            });
        q.wait_empty().await;
        let stats = pool.stats();
        assert_eq!(
            (stats.ok, stats.permanent, stats.timed_out, stats.panicked),
            (35, 5, 10, 5)
        );
        assert_eq!(stats.failed, 15);
        scraper.scrape();
        scraper.assert_pool_matches("jobs", &stats);
        let dead_by = [
            (Reason::Rejected, 5),
            (Reason::Nacked, 5),
            (Reason::TimedOut, 5),
        ];
        scraper.assert_queue_matches("jobs", &stats.queue, &dead_by);
        // Handling times are exact on virtual time: 10 ms, or the 1 s limit.
        let times = scraper.histogram(names::POOL_HANDLING_SECONDS, "jobs", &[("kind", "even")]);
        assert!(times.iter().all(|&t| t == 0.01 || t == 1.0), "{times:?}");
        assert_eq!(times.iter().filter(|&&t| t == 1.0).count(), 10);
        pool.shutdown(SECOND).await;
    });
}

/// `describe` gives every series a unit and a description.
#[test]
fn describe_gives_every_metric_a_unit_and_a_description() {
    let recorder = Recorder::new();
    recorder.run(|rt, scraper| async move {
        names::describe();
        let q = named(&rt, "described", Config::new(SECOND));
        q.try_push(1).unwrap();
        let pool = Pool::builder(q.clone())
            .workers(1)
            .spawn(|_| async { Ok(()) });
        q.wait_empty().await;
        let _ = pool.stats();
        let series = scraper.snapshotter.snapshot().into_vec();
        // 18 counters (late acks in two), one per dead-letter reason, 6 gauges; 5 outcomes
        // and a histogram for the one item type.
        assert_eq!(series.len(), 18 + Reason::ALL.len() + 6 + 5 + 1);
        for (key, unit, description, _) in series {
            let name = key.key().name().to_string();
            let expected = if name == names::POOL_HANDLING_SECONDS
                || name == names::OLDEST_READY_AGE_SECONDS
            {
                Unit::Seconds
            } else {
                Unit::Count
            };
            assert_eq!(unit, Some(expected), "{name}");
            assert!(description.is_some_and(|d| !d.is_empty()), "{name}");
        }
        pool.shutdown(SECOND).await;
    });
}

/// The paused flag and the oldest ready item's age, in seconds: the age grows while the
/// item waits (published every `PUBLISH_EVERY` while items are ready, nothing else
/// changing), paused or not, and is 0 once nothing is ready.
#[test]
fn the_paused_gauge_and_the_oldest_ready_age() {
    let recorder = Recorder::new();
    recorder.run(|rt, scraper| async move {
        let q = named(&rt, "age", Config::new(SECOND));
        q.push(1).await.unwrap();
        sleep(&rt, 10 * SECOND).await;
        let _ = q.stats(); // publishes at once
        scraper.scrape();
        let age = scraper.gauge(names::OLDEST_READY_AGE_SECONDS, "age");
        assert!((9.999..=10.0).contains(&age), "{age}");
        assert_eq!(scraper.gauge(names::PAUSED, "age"), 0.0);

        q.pause().await.unwrap();
        // No stats read: the driver's publications move the age.
        sleep(&rt, 5 * SECOND + Duration::from_millis(1)).await;
        scraper.scrape();
        assert_eq!(scraper.gauge(names::PAUSED, "age"), 1.0);
        let age = scraper.gauge(names::OLDEST_READY_AGE_SECONDS, "age");
        assert!((14.0..=15.001).contains(&age), "{age}");

        q.resume().await.unwrap();
        q.receive().await.unwrap().ack().await.unwrap();
        let s = q.stats();
        scraper.scrape();
        assert_eq!(scraper.gauge(names::OLDEST_READY_AGE_SECONDS, "age"), 0.0);
        scraper.assert_queue_matches("age", &s, &[]);
    });
}
