//! The names a runtime adapter (`leaseq-tokio`, `leaseq-smol`) re-exports, written once:
//! [`runtime_facade!`](crate::runtime_facade) expands in the adapter's root to the same list
//! of `pub use`s and the aliases that fix its runtime ([`LeaseQueue`](crate::LeaseQueue),
//! [`Delivery`](crate::Delivery), [`Pool`](crate::Pool), [`Consumer`](crate::Consumer)), so
//! the two adapters cannot drift apart and a job service needs the adapter and a store crate
//! only. The `#[cfg(feature = ..)]` lines are read against the adapter's features, which
//! carry the same names as this crate's and turn them on.

/// Re-exports leaseq's API from a runtime adapter's root, with `$rt` as the runtime of the
/// aliases and `$name` the runtime's name in their docs (see the module's header).
///
/// ```ignore
/// leaseq_async::runtime_facade!(TokioRuntime, "tokio");
/// ```
#[macro_export]
macro_rules! runtime_facade {
    ($rt:ty, $name:literal) => {
        // The core state machine's own types, and the trait the runtime implements.
        pub use $crate::{core, Backoff, Config, ConfigError, Jitter, Timestamp};
        pub use $crate::{BoxFuture, Runtime};
        pub use $crate::{ConservationError, Event, EventMask, Histogram, Stats};

        #[doc = concat!("A lease queue on ", $name, ", its items kept by store `S`: in memory")]
        /// unless another store is named (`leaseq_sqlite::SqliteStore`,
        /// `leaseq_postgres::PgStore`; or use `SqliteQueue` / `PgQueue`).
        pub type LeaseQueue<T, S = MemoryStore<T, $rt>> = $crate::LeaseQueue<T, $rt, S>;
        pub use $crate::DEFAULT_MAX_LEASE;
        pub use $crate::{
            AckBatch, AdminError, BatchError, CancelError, InMemory, LeaseLost, NewQueueError,
            NoCodec, OpenStore, Page, Push, PushError, QueueBuilder, QueueSettings, Settling,
            UniqueKey, MAX_PRIORITY,
        };
        pub use $crate::{BytesCodec, Codec, CodecError};
        pub use $crate::{ItemState, ItemView, LatencyAdvisor, MessageId, TypeReport};

        #[doc = concat!("A leased item from a ", $name, " queue.")]
        pub type Delivery<T, S = MemoryStore<T, $rt>> = $crate::Delivery<T, $rt, S>;
        pub use $crate::{Acked, Extended, Nacked, Receipt, ReceiptError, SettleError, Snoozed};
        pub use $crate::StoreError;
        pub use $crate::{CheckpointError, Progress, MAX_PROGRESS_BYTES};
        pub use $crate::{DeadLetter, Failure, Reason, RedriveError};
        pub use $crate::{Receive, ReceiveError, ReceiveStream};

        #[doc = concat!("A worker pool on ", $name, ".")]
        pub type Pool<T, S = MemoryStore<T, $rt>> = $crate::Pool<T, $rt, S>;

        #[doc = concat!("A receiver with a prefetch (see [`leaseq_async::Consumer`]), on ", $name, ".")]
        pub type Consumer<T, S = MemoryStore<T, $rt>> = $crate::Consumer<T, $rt, S>;
        /// The typed job router (feature `router`): see [`leaseq_async::router`].
        #[cfg(feature = "router")]
        pub use $crate::router;
        pub use $crate::KindPolicy;
        pub use $crate::{diagnose, Finding, FindingKind, Holding, StuckWorker, Watchdog};
        #[cfg(feature = "router")]
        pub use $crate::{Envelope, EnvelopeCodec, JobKind, Router};
        pub use $crate::{ItemTimeout, Job, JobError, PoolBuilder, PoolReport, PoolStats};
        pub use $crate::{PoolWatch, Running, Stopping};

        // The store behind a queue: the in-memory default, and the seam another store
        // implements.
        pub use $crate::{Drive, MemoryStore, MemoryTicket, MemoryWaiting, Store, TakeHeartbeat};
        pub use $crate::Taken;

        // Flow control (limits, rates, ordered groups, key windows) and multi-step jobs
        // (dependencies, workflows, batches): the traits every store implements.
        pub use $crate::core::{FlowKey, FlowKeys, GroupDeadLetter, KeyWindow, LimitScope};
        pub use $crate::dependencies;
        pub use $crate::dependencies::DependencyStore;
        pub use $crate::{FlowControl, FlowSettings, FlowWaiting};

        // What a job service uses beside the queue and the pool, so that it needs this crate
        // and a store crate only: periodic jobs (the core's schedule policy and the scheduler
        // that pushes its ticks; `CronCalendar` with the feature `cron`), operator filters,
        // the codecs of the durable stores (`PostcardCodec` with `serde`, `EnvelopeCodec`
        // with `router`, above), error chains.
        pub use $crate::core::schedule::{self, CatchUp, Interval, Schedule};
        #[cfg(feature = "serde")]
        pub use $crate::PostcardCodec;
        pub use $crate::ScheduleState;
        pub use $crate::{system_clock, Scheduler, SchedulerError, SchedulerStep, WallClock};
        pub use $crate::{Closing, DeadFilter, ErrorChain, ItemKind};
        // The record of finished jobs a store keeps with a retention window (Postgres's
        // `Options::retention`): its entries and the operator's query.
        #[cfg(feature = "cron")]
        pub use $crate::{CronCalendar, CronError};
        pub use $crate::{FinishOutcome, Finished, HistoryQuery};
        // For a store of your own, and for inspectors: the seam's other types, checkpoints,
        // and the metric names.
        pub use $crate::{metrics, progress};
        pub use $crate::{Checkpointing, LeaseKey, LeaseSignal, StoredCounts, StoredItem};
        pub use $crate::StoredState;
        pub use $crate::{ScheduleCommit, ScheduleCommitError, ScheduleCommitted, Withdrawn};
    };
}
