//! Everything of `leaseq-async` a tokio user needs (all but the simulator's types) is
//! reachable from this crate: this file compiles only if it is.

use std::time::Duration;

#[allow(unused_imports)]
use leaseq_tokio::{
    core, diagnose, AckBatch, Acked, Backoff, BoxFuture, Config, ConfigError, ConservationError,
    DeadLetter, Delivery, Drive, Event, EventMask, Extended, Failure, Finding, FindingKind,
    Histogram, Holding, ItemState, ItemTimeout, ItemView, Jitter, Job, JobError, LatencyAdvisor,
    LeaseLost, LeaseQueue, MemoryStore, MemoryTicket, MemoryWaiting, MessageId, Nacked,
    NewQueueError, Pool, PoolBuilder, PoolExt, PoolReport, PoolStats, PushError, QueueBuilder,
    Reason, Receipt, ReceiptError, Receive, ReceiveError, ReceiveStream, RedriveError, Runtime,
    Stats, Store, StuckWorker, Taken, Timestamp, TokioClock, TokioRuntime, TokioTask, TokioTimer,
    TypeReport, Watchdog, DEFAULT_MAX_LEASE,
};
#[allow(unused_imports)]
use leaseq_tokio::{shutdown_signal, Stopping};
// What a job service names beside the queue and the pool (issue 30, "one import path").
#[cfg(feature = "serde")]
#[allow(unused_imports)]
use leaseq_tokio::PostcardCodec;
#[allow(unused_imports)]
use leaseq_tokio::{
    metrics, progress, schedule, system_clock, BytesCodec, CatchUp, Checkpointing, Closing, Codec,
    CodecError, DeadFilter, ErrorChain, Interval, ItemKind, KindPolicy, LeaseKey, LeaseSignal,
    Page, Push, Schedule, Scheduler, SchedulerStep, StoredCounts, StoredItem, StoredState,
    WallClock,
};
#[cfg(feature = "router")]
#[allow(unused_imports)]
use leaseq_tokio::{router, Envelope, EnvelopeCodec, JobKind, Router};
#[cfg(feature = "cron")]
#[allow(unused_imports)]
use leaseq_tokio::{CronCalendar, CronError};
#[allow(unused_imports)]
use leaseq_tokio::{FinishOutcome, Finished, HistoryQuery};
#[allow(unused_imports)]
use leaseq_tokio::{
    ScheduleCommit, ScheduleCommitError, ScheduleCommitted, ScheduleState, SchedulerError,
    Withdrawn,
};

/// The re-exported `MemoryStore` is a `Store`, with the re-exported ticket and wait.
fn is_store<
    S: Store<u32, Runtime = TokioRuntime, Ticket = MemoryTicket, Waiting = MemoryWaiting>,
>() {
}

#[tokio::test(start_paused = true)]
async fn the_new_items_are_the_shared_layers() {
    assert_eq!(DEFAULT_MAX_LEASE, Duration::from_secs(3600));
    let q: LeaseQueue<u32> = LeaseQueue::new(Config::new(Duration::from_secs(1))).unwrap();
    is_store::<MemoryStore<u32, TokioRuntime>>();
    let waited = q.receive_timeout(Duration::from_millis(5)).await;
    assert_eq!(waited.err(), Some(ReceiveError::Timeout));
}

#[tokio::test(start_paused = true)]
async fn the_memory_store_keeps_no_record_of_finished_jobs() {
    let q: LeaseQueue<u32> = LeaseQueue::new(Config::new(Duration::from_secs(1))).unwrap();
    q.push(1).await.unwrap();
    q.receive().await.unwrap().ack().await.unwrap();
    assert!(q.history(HistoryQuery::first(10)).await.unwrap().is_empty());
}

#[test]
fn the_record_of_finished_jobs_is_the_shared_layers() {
    let q: leaseq_async::HistoryQuery = HistoryQuery::first(10).outcome(FinishOutcome::Acked);
    assert_eq!(q.outcome, Some(leaseq_async::FinishOutcome::Acked));
    let at = std::time::SystemTime::UNIX_EPOCH;
    let f: leaseq_async::Finished =
        Finished::new(1, MessageId::new(2), FinishOutcome::Expired, 0, at);
    assert_eq!(f.outcome.as_str(), "expired");
}
