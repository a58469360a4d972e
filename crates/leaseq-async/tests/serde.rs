//! Serde for the pool's reports (feature `serde`): what deserializes comes back equal; what
//! holds `&'static str` item types serializes only.
//!
//! Run with `cargo test -p leaseq-async --features serde`.
#![cfg(feature = "serde")]

use std::fmt::Debug;
use std::time::Duration;

use leaseq_async::{
    Config, Finding, FindingKind, LeaseQueue, Pool, PoolReport, Runtime, Timestamp, Watchdog,
};
use leaseq_test_kit::sim;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

fn round_trip<V: Serialize + DeserializeOwned + PartialEq + Debug>(value: &V) {
    let json = serde_json::to_string(value).unwrap();
    let back: V = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, value, "through {json}");
}

/// A report with every part filled: outcomes of two types, a stuck worker, an item handed
/// back, findings.
fn report() -> PoolReport {
    sim::run(|rt| async move {
        let config = Config::new(Duration::from_secs(1)).with_max_attempts(1);
        let q = LeaseQueue::with_runtime(rt.clone(), config).unwrap();
        for n in 0..4u32 {
            q.try_push(n).unwrap();
        }
        let pool = Pool::builder(q.clone())
            .workers(2)
            // A hung handler that holds on past its lease, as before these defaults:
            // its lease runs out (a dead letter), it is reported stuck, then handed back.
            .heartbeat(false)
            .item_timeout(leaseq_async::ItemTimeout::None)
            .item_type(|n: &u32| if *n == 3 { "slow" } else { "quick" })
            .watchdog(Watchdog::new(
                Duration::from_secs(1),
                Duration::from_secs(5),
            ))
            .spawn({
                let rt = rt.clone();
                move |job| {
                    let rt = rt.clone();
                    async move {
                        if job.item == 3 {
                            // Hangs: reported stuck, then handed back at shutdown.
                            rt.sleep_until(Timestamp::MAX).await;
                        }
                        if job.item == 1 {
                            return Err(leaseq_async::JobError::retry("no"));
                        }
                        Ok(())
                    }
                }
            });
        sim::sleep(&rt, Duration::from_secs(10)).await;
        pool.shutdown(Duration::from_secs(1)).await
    })
}

#[test]
fn pool_reports_serialize_with_every_part() {
    let report = report();
    assert_eq!((report.stats.ok, report.stats.failed), (2, 1));
    assert_eq!(report.handed_back, 1);
    assert_eq!(report.stuck.len(), 1);
    assert!(!report.diagnosis.is_empty());
    let json: Value = serde_json::to_value(&report).unwrap();
    assert_eq!(json["stats"]["ok"], 2);
    assert_eq!(json["stats"]["queue"]["dead_lettered"], 2);
    // Per-type reports as `[name, report]` pairs, in name order.
    assert_eq!(json["stats"]["types"][0][0], "quick");
    assert_eq!(json["stats"]["types"][0][1]["failed"], 1);
    // (The hung item never finished: its type has no report.)
    assert_eq!(json["stats"]["types"].as_array().unwrap().len(), 1);
    assert_eq!(json["took"], serde_json::json!({ "secs": 1, "nanos": 0 }));
    assert_eq!(json["handed_back_items"], serde_json::json!([3]));
    assert_eq!(json["stuck"][0]["holding"]["item_type"], "slow");
    assert_eq!(json["stuck"][0]["holding"]["id"], 3);
    assert_eq!(json["diagnosis"][0]["kind"], "StuckWorkers");
    // The parts that deserialize come back equal.
    for finding in &report.diagnosis {
        round_trip(finding);
    }
    round_trip(&report.stats.queue);
    round_trip(&report.stats.types[0].1);
}

#[test]
fn findings_and_watchdog_settings_round_trip() {
    round_trip(&Finding {
        kind: FindingKind::VisibilityTooShort,
        message: "raise the visibility".to_string(),
    });
    for kind in [
        FindingKind::ItemsExpireUnworked,
        FindingKind::ItemTimeoutTooShort,
        FindingKind::ManyDeadLetters,
        FindingKind::StuckWorkers,
        FindingKind::BlockingOverruns,
        FindingKind::HungUnderHeartbeat,
        FindingKind::StoreFailures,
        FindingKind::Paused,
    ] {
        round_trip(&kind);
    }
    round_trip(&Watchdog::default());
}
