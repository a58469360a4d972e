//! The RabbitMQ row: a durable classic queue, persistent messages (`delivery_mode = 2`),
//! publisher confirms, [`CONSUMERS`] consumers with manual acks and a prefetch of
//! [`PREFETCH`], the workload.
//!
//! The producer publishes on its own connection and channel (in confirm mode) and awaits
//! the broker's confirms [`PUSH_BATCH`] at a time (as leaseq's producer awaits each batch):
//! a confirm of a persistent message to a durable queue comes once the broker has written
//! it to disk (RabbitMQ fsyncs in groups, before confirming). Each consumer, on its own
//! connection and channel, acks every delivery (`basic.ack`, which the broker does not
//! confirm, as AMQP clients do). The clock runs from the first publish to the last ack
//! sent. The queue is declared afresh under a unique name and deleted afterwards.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions,
    ConfirmSelectOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use tokio::sync::Notify;

use super::{payload, payload_ok, wait_acked, BenchError, CONSUMERS, PUSH_BATCH};

/// Where the server is expected.
pub const ADDR: &str = "127.0.0.1:5672";

/// The URI connected to (the default `guest` user, the default vhost).
pub const URI: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

/// Unacked deliveries each consumer may hold.
pub const PREFETCH: u16 = 32;

/// How the row's durability is set, for the table.
pub const DURABILITY: &str = "RabbitMQ durable queue, persistent messages, publisher confirms";

/// A channel on a connection of its own, driven by the current tokio runtime.
async fn channel() -> Result<(Connection, Channel), BenchError> {
    let props = ConnectionProperties::default()
        .with_executor(tokio_executor_trait::Tokio::current())
        .with_reactor(tokio_reactor_trait::Tokio::current());
    let conn = Connection::connect(URI, props).await?;
    let ch = conn.create_channel().await?;
    Ok((conn, ch))
}

/// Runs the row once with `items` messages. Returns the time from the first publish to the
/// last ack.
pub async fn run(items: u64) -> Result<Duration, BenchError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = format!("leaseq_bench_{}_{nanos}", std::process::id());
    let (admin_conn, admin) = channel().await?;
    let durable = QueueDeclareOptions {
        durable: true,
        ..Default::default()
    };
    admin
        .queue_declare(&name, durable, FieldTable::default())
        .await?;
    let result = measure(&name, items).await;
    let deleted = admin
        .queue_delete(&name, QueueDeleteOptions::default())
        .await;
    let _ = admin_conn.close(200, "done").await;
    let took = result?;
    deleted?;
    Ok(took)
}

async fn measure(name: &str, items: u64) -> Result<Duration, BenchError> {
    let acked = Arc::new(AtomicU64::new(0));
    let bad = Arc::new(AtomicU64::new(0));
    let all = Arc::new(Notify::new());
    let mut tasks = Vec::with_capacity(CONSUMERS);
    let mut conns = Vec::with_capacity(CONSUMERS + 1);
    for k in 0..CONSUMERS {
        let (conn, ch) = channel().await?;
        ch.basic_qos(PREFETCH, BasicQosOptions::default()).await?;
        let mut deliveries = ch
            .basic_consume(
                name,
                &format!("worker-{k}"),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await?;
        conns.push((conn, ch));
        let (acked, bad, all) = (acked.clone(), bad.clone(), all.clone());
        tasks.push(tokio::spawn(async move {
            while let Some(d) = deliveries.next().await {
                let d = d?;
                if d.redelivered || !payload_ok(&d.data) {
                    bad.fetch_add(1, Ordering::AcqRel);
                }
                d.ack(BasicAckOptions::default()).await?;
                if acked.fetch_add(1, Ordering::AcqRel) + 1 == items {
                    all.notify_one();
                }
            }
            Ok::<(), BenchError>(())
        }));
    }

    let (conn, producer) = channel().await?;
    producer
        .confirm_select(ConfirmSelectOptions::default())
        .await?;
    let persistent = BasicProperties::default().with_delivery_mode(2);
    let start = Instant::now();
    let mut pending = Vec::with_capacity(PUSH_BATCH);
    let mut nacked = 0u64;
    for i in 0..items {
        let confirm = producer
            .basic_publish(
                "",
                name,
                BasicPublishOptions::default(),
                &payload(i),
                persistent.clone(),
            )
            .await?;
        pending.push(confirm);
        if pending.len() == PUSH_BATCH || i + 1 == items {
            for c in pending.drain(..) {
                nacked += u64::from(!c.await?.is_ack());
            }
        }
    }
    let waited = wait_acked(&all, tasks, Duration::from_secs(600)).await;
    let took = start.elapsed();
    let _ = conn.close(200, "done").await;
    for (c, _) in conns {
        let _ = c.close(200, "done").await;
    }
    waited?;
    let bad = bad.load(Ordering::Acquire);
    if bad != 0 || nacked != 0 {
        return Err(
            format!("RabbitMQ: {bad} redelivered or mangled, {nacked} publishes nacked").into(),
        );
    }
    Ok(took)
}
