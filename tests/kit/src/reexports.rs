//! The re-exports both runtime crates (`leaseq-smol`, `leaseq-tokio`) share, named one by
//! one: their `reexports` tests compile only if each is reachable.

/// Names (imports) every item of `leaseq-async` that both runtime crates re-export beside
/// their runtime's own types: `use_shared_reexports!(leaseq_smol);` in a test compiles only
/// if crate `leaseq_smol` re-exports each. Items behind the calling crate's `serde`,
/// `router` and `cron` features are named when it has them. Adds the test
/// `the_record_of_finished_jobs_is_the_shared_layers` (the history types are the shared
/// layers').
#[macro_export]
macro_rules! use_shared_reexports {
    ($k:ident) => {
        #[allow(unused_imports)]
        use $k::{
            core, diagnose, AckBatch, Acked, Backoff, BoxFuture, Config, ConfigError,
            ConservationError, DeadLetter, Delivery, Drive, Event, EventMask, Extended, Failure,
            Finding, FindingKind, Histogram, Holding, ItemState, ItemTimeout, ItemView, Jitter,
            Job, JobError, LatencyAdvisor, LeaseLost, LeaseQueue, MemoryStore, MemoryTicket,
            MemoryWaiting, MessageId, Nacked, NewQueueError, Pool, PoolBuilder, PoolReport,
            PoolStats, PushError, QueueBuilder, Reason, Receipt, ReceiptError, Receive,
            ReceiveError, ReceiveStream, RedriveError, Runtime, Stats, Store, StuckWorker, Taken,
            Timestamp, TypeReport, Watchdog, DEFAULT_MAX_LEASE,
        };
        #[allow(unused_imports)]
        use $k::{shutdown_signal, Stopping};
        // What a job service names beside the queue and the pool (issue 30, "one import path").
        #[cfg(feature = "serde")]
        #[allow(unused_imports)]
        use $k::PostcardCodec;
        #[allow(unused_imports)]
        use $k::{
            metrics, progress, schedule, system_clock, BytesCodec, CatchUp, Checkpointing, Closing,
            Codec, CodecError, DeadFilter, ErrorChain, Interval, ItemKind, KindPolicy, LeaseKey,
            LeaseSignal, Page, Push, Schedule, Scheduler, SchedulerStep, StoredCounts, StoredItem,
            StoredState, WallClock,
        };
        #[cfg(feature = "router")]
        #[allow(unused_imports)]
        use $k::{router, Envelope, EnvelopeCodec, JobKind, Router};
        #[cfg(feature = "cron")]
        #[allow(unused_imports)]
        use $k::{CronCalendar, CronError};
        #[allow(unused_imports)]
        use $k::{FinishOutcome, Finished, HistoryQuery};
        // Flow control and multi-step jobs (issues 32 and 33).
        #[allow(unused_imports)]
        use $k::{
            dependencies, DependencyStore, FlowControl, FlowKey, FlowKeys, FlowSettings,
            FlowWaiting, GroupDeadLetter, KeyWindow, LimitScope, PoolWatch, Running, Snoozed,
        };
        #[allow(unused_imports)]
        use $k::{
            ScheduleCommit, ScheduleCommitError, ScheduleCommitted, ScheduleState, SchedulerError,
            Withdrawn,
        };

        /// The record of finished jobs is the shared layers' types.
        #[test]
        fn the_record_of_finished_jobs_is_the_shared_layers() {
            let q: leaseq_async::HistoryQuery =
                HistoryQuery::first(10).outcome(FinishOutcome::Acked);
            assert_eq!(q.outcome, Some(leaseq_async::FinishOutcome::Acked));
            let at = std::time::SystemTime::UNIX_EPOCH;
            let f: leaseq_async::Finished =
                Finished::new(1, $k::MessageId::new(2), FinishOutcome::Expired, 0, at);
            assert_eq!(f.outcome.as_str(), "expired");
        }
    };
}
