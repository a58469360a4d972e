//! The fault harness: a store talking to the server through a loopback proxy
//! (`faults/proxy.rs`) that, driven by a seed, loses replies after statements, resets
//! connections and stalls them at random points of pushes, claims, heartbeats and settles.
//! Producers and consumers log what they were told (`faults/log.rs`); at the end a direct
//! connection checks the rows against the log (`faults/check.rs`): every push answered Ok
//! is acked or dead-lettered as told, or still there; an item whose ack answered Ok never
//! comes back; no item is delivered twice at one attempt (a row inserted twice would be);
//! every other redelivery follows a lease that was lost (a stale or unknown settle, or
//! none); no row exists that no push was told of.
//!
//! CI runs `FAULTS_CI` faults of each kind on seed 1. `LEASEQ_FAULT_ROUNDS=N` runs N of each
//! kind (at least 200 for the reliability figures), `LEASEQ_FAULT_SEED` picks the seed.

use leaseq_test_kit::pg as common;

#[path = "faults/check.rs"]
mod check;
#[path = "faults/log.rs"]
mod log;
#[path = "faults/proxy.rs"]
mod proxy;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leaseq_async::{Backoff, Config};
use leaseq_core::Nacked;
use leaseq_postgres::{BytesCodec, PgQueue, Postgres};

use log::{told, Entry, Log, Op, Told};

/// Faults of each kind in the CI run.
const FAULTS_CI: u64 = 30;
/// One request in this many is faulted (while a quota remains).
const ONE_IN: u64 = 20;
const VISIBILITY: Duration = Duration::from_secs(2);
const PRODUCERS: u64 = 3;
const CONSUMERS: u64 = 4;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// SplitMix64, for the consumers' choices.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[test]
fn lost_replies_resets_and_stalls_never_lose_or_duplicate() {
    let Some(url) = common::server() else { return };
    let quota = env_u64("LEASEQ_FAULT_ROUNDS").unwrap_or(FAULTS_CI);
    let seed = env_u64("LEASEQ_FAULT_SEED").unwrap_or(1);
    common::runtime().block_on(run(url, quota, seed));
}

async fn run(url: String, quota: u64, seed: u64) {
    let direct: tokio_postgres::Config = url.parse().expect("url");
    let proxy = proxy::Proxy::start(
        &proxy::Proxy::upstream(&direct),
        seed,
        quota,
        ONE_IN,
        Duration::from_millis(400),
    )
    .await;
    let via = proxy.config(&direct);
    let name = common::unique("faults");
    let config = Config::new(VISIBILITY)
        .with_max_attempts(5)
        .with_backoff(Backoff::exponential(
            Duration::from_millis(10),
            Duration::from_millis(100),
        ));
    let options = common::options().heartbeat_every(Duration::from_millis(300));
    // Opening may meet a fault too: tried again, as an application would.
    let q: PgQueue<Vec<u8>> = loop {
        match leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(config.clone())
            .name(name.to_string())
            .codec(BytesCodec)
            .open(Postgres::config(via.clone()).options(options.clone()))
            .await
        {
            Ok(q) => break q,
            Err(e) => eprintln!("open: {e}; again"),
        }
    };
    let log = Arc::new(Log::default());
    let producing = Arc::new(AtomicBool::new(true));
    let consuming = Arc::new(AtomicBool::new(true));
    let pushed = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let limit = Duration::from_secs(30 + quota * 3 / 2);

    let mut producers = Vec::new();
    for p in 0..PRODUCERS {
        let (q, log, producing, pushed) =
            (q.clone(), log.clone(), producing.clone(), pushed.clone());
        producers.push(tokio::spawn(async move {
            let mut n = 0u64;
            while producing.load(Ordering::Relaxed) {
                let item = ((p << 48) | n).to_le_bytes().to_vec();
                n += 1;
                match q.push(item).await {
                    Ok(id) => log.add(Entry::Pushed {
                        id: id.get(),
                        ok: true,
                    }),
                    Err(e) => match e.store_error().map(|s| s.is_outcome_unknown()) {
                        Some(true) => {
                            if let leaseq_async::PushError::Unconfirmed { id, .. } = e {
                                log.add(Entry::Pushed {
                                    id: id.get(),
                                    ok: false,
                                });
                            }
                        }
                        _ => log.add(Entry::Refused),
                    },
                }
                pushed.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let mut consumers = Vec::new();
    for c in 0..CONSUMERS {
        let (q, log, consuming) = (q.clone(), log.clone(), consuming.clone());
        consumers.push(tokio::spawn(async move {
            let mut rng = mix(seed ^ ((c + 1) * 0x1234_5678));
            while consuming.load(Ordering::Relaxed) {
                let got = if c % 2 == 0 {
                    tokio::time::timeout(Duration::from_millis(200), q.receive_with_heartbeat())
                        .await
                } else {
                    tokio::time::timeout(Duration::from_millis(200), q.receive()).await
                };
                let Ok(Some(mut d)) = got else { continue };
                let (id, attempt) = (d.id().get(), d.attempt());
                log.add(Entry::Delivered { id, attempt });
                rng = mix(rng);
                let settled = |op, told| Entry::Settled {
                    id,
                    attempt,
                    op,
                    told,
                };
                match rng % 100 {
                    0..=69 => {
                        let r = d.ack().await;
                        log.add(settled(Op::Ack, told(&r)));
                    }
                    70..=84 => {
                        let r = d.nack("faults: nack").await;
                        let t = match &r {
                            Ok(Nacked::DeadLettered { .. }) => Told::Ok { dead: true },
                            _ => told(&r),
                        };
                        log.add(settled(Op::Nack, t));
                    }
                    85..=89 => {
                        let r = d.dead_letter("faults: poison").await;
                        log.add(settled(Op::DeadLetter, told(&r)));
                    }
                    _ => {
                        let r = d.extend(VISIBILITY).await;
                        log.add(settled(Op::Extend, told(&r)));
                        let r = d.ack().await;
                        log.add(settled(Op::Ack, told(&r)));
                    }
                }
            }
        }));
    }

    // Until every quota is met (and something was pushed), then the producers stop.
    while !(proxy.done() && pushed.load(Ordering::Relaxed) > 200) && started.elapsed() < limit {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    producing.store(false, Ordering::Relaxed);
    for p in producers {
        p.await.expect("producer");
    }
    // Drained: nothing waiting or leased (leases lost to faults run out and come back).
    let db = common::sql(&url).await;
    let live = "SELECT count(*) FROM ".to_string()
        + &format!(
            "{}.items WHERE queue = $1 AND state IN (0, 1)",
            common::SCHEMA
        );
    let drain_limit = Instant::now() + Duration::from_secs(60);
    loop {
        let n: i64 = db.query_one(&live, &[&name]).await.expect("count").get(0);
        if n == 0 || Instant::now() > drain_limit {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    proxy.armed.store(false, Ordering::Relaxed);
    consuming.store(false, Ordering::Relaxed);
    for c in consumers {
        c.await.expect("consumer");
    }
    let stats = q.stats();
    drop(q);

    let rows: HashMap<u64, i16> = db
        .query(
            &format!(
                "SELECT id, state FROM {}.items WHERE queue = $1",
                common::SCHEMA
            ),
            &[&name],
        )
        .await
        .expect("rows")
        .iter()
        .map(|r| (r.get::<_, i64>(0) as u64, r.get(1)))
        .collect();
    let report = check::check(&log.entries(), &rows);
    let counts = proxy.counts();
    println!(
        "faults (seed {seed}, quota {quota}): {} in {:.1?}, {} requests; {report:#?}; \
         store: lease_expired {}, late_acks_stale {}",
        proxy::KINDS
            .iter()
            .zip(counts)
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        started.elapsed(),
        proxy.requests.load(Ordering::Relaxed),
        stats.lease_expired,
        stats.late_acks_stale,
    );
    assert!(
        report.violations.is_empty(),
        "{} violations: {:#?}",
        report.violations.len(),
        report.violations
    );
    assert!(proxy.done(), "quotas not met in time: {counts:?}");
    assert_eq!(rows.values().filter(|s| **s != 2).count(), 0, "drained");
    // Every duplicate delivery follows a lost lease: a settle refused or unknown, or a
    // lease the rescuer took back.
    assert!(
        report.duplicates as u64
            <= (report.stale + report.unknown + report.not_done) as u64 + stats.lease_expired,
        "duplicates {} not matched by lost leases ({report:?}, rescued {})",
        report.duplicates,
        stats.lease_expired
    );
}
