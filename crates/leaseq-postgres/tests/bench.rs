//! `#[ignore]`d measurements (run with `--ignored --nocapture`): end-to-end throughput of
//! the store with 4 workers. The side-by-side comparison with a bare SKIP LOCKED loop is
//! the root example `pg_bench`.

mod common;

use std::time::{Duration, Instant};

use leaseq_async::Config;
use leaseq_postgres::{open, BytesCodec, Options};

#[test]
#[ignore]
fn throughput_4_workers_batch_16() {
    let Some(url) = common::server() else { return };
    let n: usize = std::env::var("LEASEQ_BENCH_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    let rt = if std::env::var("LEASEQ_CURRENT_THREAD").is_ok() {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    } else {
        common::runtime()
    };
    rt.block_on(async {
        let q = open::<Vec<u8>, _>(
            &url,
            &common::unique("bench"),
            Config::new(Duration::from_secs(30)),
            Options::new()
                .schema("leaseq_bench")
                .claims_in_flight(env_or("LEASEQ_CLAIMS", 4))
                .acks_in_flight(env_or("LEASEQ_ACKS", 4)),
            BytesCodec,
        )
        .await
        .expect("open");
        let start = Instant::now();
        let producer = {
            let q = q.clone();
            tokio::spawn(async move {
                let mut i = 0;
                while i < n {
                    let k = 256.min(n - i);
                    let batch = (i..i + k).map(|i| {
                        let mut item = vec![0u8; 16];
                        item[..8].copy_from_slice(&(i as u64).to_le_bytes());
                        item
                    });
                    q.push_batch(batch.collect::<Vec<_>>()).await.expect("push");
                    i += k;
                }
            })
        };
        let producer = if std::env::var("LEASEQ_PREFILL").is_ok() {
            producer.await.unwrap();
            println!("prefilled in {:?}", start.elapsed());
            tokio::spawn(async {})
        } else {
            producer
        };
        let start = Instant::now();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut workers = Vec::new();
        for _ in 0..4 {
            let q = q.clone();
            let done = done.clone();
            workers.push(tokio::spawn(async move {
                let (mut recv, mut ack, mut batches) = (Duration::ZERO, Duration::ZERO, 0);
                while done.load(std::sync::atomic::Ordering::Relaxed) < n {
                    let t = Instant::now();
                    let batch =
                        tokio::time::timeout(Duration::from_millis(200), q.receive_batch(16)).await;
                    recv += t.elapsed();
                    let Ok(batch) = batch else { continue };
                    let k = batch.len();
                    batches += 1;
                    let t = Instant::now();
                    let r = q.ack_batch(batch).await;
                    ack += t.elapsed();
                    assert_eq!(r.accepted(), k);
                    done.fetch_add(k, std::sync::atomic::Ordering::Relaxed);
                }
                println!("worker: {batches} batches, receiving {recv:?}, acking {ack:?}");
            }));
        }
        producer.await.unwrap();
        for w in workers {
            w.await.unwrap();
        }
        let took = start.elapsed();
        println!(
            "{n} items in {took:?}: {:.0} items/s",
            n as f64 / took.as_secs_f64()
        );
    });
}

#[test]
#[ignore]
fn phases() {
    let Some(url) = common::server() else { return };
    let n = 20_000usize;
    common::runtime().block_on(async {
        let q = open::<Vec<u8>, _>(
            &url,
            &common::unique("phases"),
            Config::new(Duration::from_secs(30)),
            Options::new().schema("leaseq_bench"),
            BytesCodec,
        )
        .await
        .expect("open");
        let t = Instant::now();
        let mut i = 0;
        while i < n {
            let k = 256.min(n - i);
            q.push_batch((0..k).map(|_| vec![0u8; 16]).collect::<Vec<_>>())
                .await
                .expect("push");
            i += k;
        }
        println!("push {n}: {:?}", t.elapsed());
        let t = Instant::now();
        let mut got = 0;
        let mut batches = Vec::new();
        while got < n {
            let b = q.receive_batch(64).await;
            got += b.len();
            batches.push(b);
        }
        println!("claim {n} in {} batches: {:?}", batches.len(), t.elapsed());
        let t = Instant::now();
        for b in batches {
            let _ = q.ack_batch(b).await;
        }
        println!("ack {n}: {:?}", t.elapsed());
    });
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
