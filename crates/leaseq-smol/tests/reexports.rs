//! Everything of `leaseq-async` a smol user needs (all but the simulator's types) is
//! reachable from this crate: this file compiles only if it is.

use std::time::Duration;

#[allow(unused_imports)]
use leaseq_smol::{
    core, diagnose, AckBatch, Acked, Backoff, BoxFuture, Config, ConfigError, ConservationError,
    DeadLetter, Delivery, Drive, Event, EventMask, Extended, Failure, Finding, FindingKind,
    Histogram, Holding, ItemState, ItemTimeout, ItemView, Jitter, Job, JobError, LatencyAdvisor,
    LeaseLost, LeaseQueue, MemoryStore, MemoryTicket, MemoryWaiting, MessageId, Nacked,
    NewQueueError, Pool, PoolBuilder, PoolReport, PoolStats, PushError, QueueBuilder, Reason,
    Receipt, ReceiptError, Receive, ReceiveError, ReceiveStream, RedriveError, Runtime,
    SmolRuntime, SmolTask, SmolTimer, Stats, Store, StuckWorker, Taken, Timestamp, TypeReport,
    Watchdog, DEFAULT_MAX_LEASE,
};
#[allow(unused_imports)]
use leaseq_smol::{shutdown_signal, Stopping};
// What a job service names beside the queue and the pool (issue 30, "one import path").
#[cfg(feature = "serde")]
#[allow(unused_imports)]
use leaseq_smol::PostcardCodec;
#[allow(unused_imports)]
use leaseq_smol::{
    metrics, progress, schedule, system_clock, BytesCodec, CatchUp, Checkpointing, Closing, Codec,
    CodecError, DeadFilter, ErrorChain, Interval, ItemKind, KindPolicy, LeaseKey, LeaseSignal,
    Page, Push, Schedule, Scheduler, SchedulerStep, StoredCounts, StoredItem, StoredState,
    WallClock,
};
#[cfg(feature = "router")]
#[allow(unused_imports)]
use leaseq_smol::{router, Envelope, EnvelopeCodec, JobKind, Router};
#[cfg(feature = "cron")]
#[allow(unused_imports)]
use leaseq_smol::{CronCalendar, CronError};
#[allow(unused_imports)]
use leaseq_smol::{FinishOutcome, Finished, HistoryQuery};
#[allow(unused_imports)]
use leaseq_smol::{
    ScheduleCommit, ScheduleCommitError, ScheduleCommitted, ScheduleState, SchedulerError,
    Withdrawn,
};

/// The re-exported `MemoryStore` is a `Store`, with the re-exported ticket and wait.
fn is_store<
    S: Store<u32, Runtime = SmolRuntime, Ticket = MemoryTicket, Waiting = MemoryWaiting>,
>() {
}

#[test]
fn the_new_items_are_the_shared_layers() {
    assert_eq!(DEFAULT_MAX_LEASE, Duration::from_secs(3600));
    smol::block_on(async {
        let config = Config::new(Duration::from_secs(1));
        let q: LeaseQueue<u32> = LeaseQueue::with_runtime(SmolRuntime::global(), config).unwrap();
        is_store::<MemoryStore<u32, SmolRuntime>>();
        let waited = q.receive_timeout(Duration::from_millis(5)).await;
        assert_eq!(waited.err(), Some(ReceiveError::Timeout));
    });
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
