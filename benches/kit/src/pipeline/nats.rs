//! The NATS JetStream row: a stream with file storage (the server's default sync: the
//! file store is fsynced every 2 minutes, not per message), one durable pull consumer with
//! explicit acks shared by [`CONSUMERS`] tasks, the workload.
//!
//! The producer publishes on its own connection and awaits the server's publish acks
//! [`PUSH_BATCH`] at a time (as leaseq's producer awaits each batch). Each consumer task,
//! on its own connection, reads the consumer's `messages()` stream (the client pulls
//! batches of 200 ahead) and acks each message (`ack()`: sent, not confirmed by the
//! server, as NATS clients do). The clock runs from the first publish until the last ack
//! is flushed to the server. The stream is created afresh under a unique name and deleted
//! afterwards.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer, stream};
use futures::StreamExt;
use tokio::sync::Notify;

use super::{payload, payload_ok, wait_acked, BenchError, CONSUMERS, PUSH_BATCH};

/// Where the server is expected.
pub const ADDR: &str = "127.0.0.1:4222";

/// How the row's durability is set, for the table.
pub const DURABILITY: &str = "JetStream file storage, default sync (fsync every 2 min)";

/// Runs the row once with `items` messages. Returns the time from the first publish to
/// the last ack flushed.
pub async fn run(items: u64) -> Result<Duration, BenchError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = format!("leaseq_bench_{}_{nanos}", std::process::id());
    let admin = jetstream::new(async_nats::connect(ADDR).await?);
    let stream = admin
        .create_stream(stream::Config {
            name: name.clone(),
            subjects: vec![name.clone()],
            storage: stream::StorageType::File,
            ..Default::default()
        })
        .await?;
    let result = measure(&stream, &name, items).await;
    let deleted = admin.delete_stream(&name).await;
    let took = result?;
    deleted?;
    Ok(took)
}

async fn measure(
    stream: &jetstream::stream::Stream,
    name: &str,
    items: u64,
) -> Result<Duration, BenchError> {
    let consumer: consumer::PullConsumer = stream
        .create_consumer(consumer::pull::Config {
            durable_name: Some("workers".to_owned()),
            ack_policy: consumer::AckPolicy::Explicit,
            ..Default::default()
        })
        .await?;
    let acked = Arc::new(AtomicU64::new(0));
    let bad = Arc::new(AtomicU64::new(0));
    let all = Arc::new(Notify::new());
    let mut tasks = Vec::with_capacity(CONSUMERS);
    for _ in 0..CONSUMERS {
        let client = async_nats::connect(ADDR).await?;
        let consumer: consumer::PullConsumer = jetstream::new(client.clone())
            .get_consumer_from_stream("workers", name)
            .await?;
        let (acked, bad, all) = (acked.clone(), bad.clone(), all.clone());
        tasks.push(tokio::spawn(async move {
            let mut messages = consumer.messages().await?;
            while let Some(m) = messages.next().await {
                let m = m?;
                let first = m.info().map(|i| i.delivered == 1).unwrap_or(false);
                if !first || !payload_ok(&m.payload) {
                    bad.fetch_add(1, Ordering::AcqRel);
                }
                m.ack().await?;
                if acked.fetch_add(1, Ordering::AcqRel) + 1 == items {
                    client.flush().await?;
                    all.notify_one();
                }
            }
            Ok::<(), BenchError>(())
        }));
    }
    drop(consumer);

    let producer = jetstream::new(async_nats::connect(ADDR).await?);
    let start = Instant::now();
    let mut pending = Vec::with_capacity(PUSH_BATCH);
    for i in 0..items {
        pending.push(producer.publish(name.to_owned(), payload(i).into()).await?);
        if pending.len() == PUSH_BATCH || i + 1 == items {
            for ack in pending.drain(..) {
                ack.await?;
            }
        }
    }
    wait_acked(&all, tasks, Duration::from_secs(600)).await?;
    let took = start.elapsed();
    let bad = bad.load(Ordering::Acquire);
    if bad != 0 {
        return Err(format!("NATS: {bad} messages redelivered or mangled").into());
    }
    Ok(took)
}
