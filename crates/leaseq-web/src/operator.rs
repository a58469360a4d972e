//! The operator interface the dashboard reads through ([`Operator`]): one shape for every
//! store, so that a store implementing it gets the dashboard (and, later, the CLI) at once.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use leaseq_async::{Finished, HistoryQuery, Page, ScheduleState, StoredCounts, StoredItem};
use leaseq_core::MessageId;

use crate::query::DeadQuery;

/// Why an [`Operator`] call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OperatorError {
    /// The store has no queue of this name.
    NoSuchQueue(String),
    /// The store could not be read or written: the error's chain in words (never a
    /// connection string or secret: the stores' errors name neither).
    Store(String),
    /// This operator only reads (see [`Capabilities`]).
    ReadOnly,
    /// The store refused the action (a dead letter that is not there, or cannot go back):
    /// why, in words.
    Refused(String),
}

impl fmt::Display for OperatorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OperatorError::NoSuchQueue(q) => write!(f, "no queue named {q:?}"),
            OperatorError::Store(e) => write!(f, "the store failed: {e}"),
            OperatorError::ReadOnly => f.write_str("this dashboard only reads this store"),
            OperatorError::Refused(e) => write!(f, "refused: {e}"),
        }
    }
}

impl std::error::Error for OperatorError {}

impl OperatorError {
    /// A store error with its whole chain of causes, one after the other.
    pub(crate) fn store(e: &dyn std::error::Error) -> OperatorError {
        let mut text = e.to_string();
        let mut cause = e.source();
        while let Some(c) = cause {
            text.push_str(": ");
            text.push_str(&c.to_string());
            cause = c.source();
        }
        OperatorError::Store(text)
    }
}

/// What an [`Operator`] can do besides reading; the dashboard shows an action only where
/// its flag is set. Cancel is to come.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// Dead letters can be put back (one, or all a filter takes: [`Operator::redrive`],
    /// [`Operator::redrive_dead`]).
    pub redrive: bool,
    /// Dead letters can be deleted.
    pub purge: bool,
    /// Queues can be paused and resumed ([`Operator::set_paused`]).
    pub pause: bool,
    /// The store can keep a record of finished jobs ([`Operator::history`]; it holds
    /// entries only where the queues' stores were asked to keep one).
    pub history: bool,
}

/// A read of a store's queues, for operator tools: the dashboard of this crate renders
/// nothing it does not get through this trait.
///
/// Implemented by [`SqliteOperator`](crate::SqliteOperator) (a SQLite file, one queue) and
/// [`PgOperator`](crate::PgOperator) (a PostgreSQL schema's queues). The reads change
/// nothing; the actions ([`redrive`](Self::redrive), [`purge_dead`](Self::purge_dead),
/// [`set_paused`](Self::set_paused)) are
/// refused with [`OperatorError::ReadOnly`] by default, and where
/// [`capabilities`](Self::capabilities) does not announce them.
pub trait Operator: Send + Sync + 'static {
    /// The kind of store, for page titles ("SQLite", "PostgreSQL"): no path, address or
    /// connection string.
    fn store_kind(&self) -> &'static str;

    /// What the store lets this operator do besides reading (nothing, by default).
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    /// Every queue with its counts, by name.
    fn queues(&self) -> impl Future<Output = Result<Vec<StoredCounts>, OperatorError>> + Send;

    /// `queue`'s counts ([`OperatorError::NoSuchQueue`] for a queue the store does not know).
    fn counts(
        &self,
        queue: &str,
    ) -> impl Future<Output = Result<StoredCounts, OperatorError>> + Send;

    /// `queue`'s live items (ready, delayed, in flight) of `page`, in id order.
    fn items(
        &self,
        queue: &str,
        page: Page,
    ) -> impl Future<Output = Result<Vec<StoredItem>, OperatorError>> + Send;

    /// `queue`'s dead letters that `query` takes, of `page`, in id order.
    fn dead_letters(
        &self,
        queue: &str,
        page: Page,
        query: &DeadQuery,
    ) -> impl Future<Output = Result<Vec<StoredItem>, OperatorError>> + Send;

    /// The schedules `queue` keeps in the store, by name.
    fn schedules(
        &self,
        queue: &str,
    ) -> impl Future<Output = Result<Vec<ScheduleState>, OperatorError>> + Send;

    /// Puts the dead letter `id` of `queue` back, ready at once, its attempts reset.
    fn redrive(
        &self,
        queue: &str,
        id: MessageId,
    ) -> impl Future<Output = Result<(), OperatorError>> + Send {
        let _ = (queue, id);
        async { Err(OperatorError::ReadOnly) }
    }

    /// Puts back the dead letters of `queue` that `query` takes, in id order, as the
    /// queue's `redrive_matching` does (one that expired, or whose key a live item holds,
    /// stays; the queue's capacity stops it); returns how many went.
    fn redrive_dead(
        &self,
        queue: &str,
        query: &DeadQuery,
    ) -> impl Future<Output = Result<u64, OperatorError>> + Send {
        let _ = (queue, query);
        async { Err(OperatorError::ReadOnly) }
    }

    /// How long the oldest ready item of each of `queues` has waited since it became ready,
    /// for those with one ready (a queue not listed has none); `None`: this store cannot say
    /// without reading every ready item (the default).
    fn oldest_ready_ages(
        &self,
        queues: &[String],
    ) -> impl Future<Output = Result<Option<Vec<(String, Duration)>>, OperatorError>> + Send {
        let _ = queues;
        async { Ok(None) }
    }

    /// The record of `queue`'s finished jobs that `query` asks for, oldest first (empty by
    /// default, and where [`capabilities`](Self::capabilities) has no `history`).
    fn history(
        &self,
        queue: &str,
        query: &HistoryQuery,
    ) -> impl Future<Output = Result<Vec<Finished>, OperatorError>> + Send {
        let _ = (queue, query);
        async { Ok(Vec::new()) }
    }

    /// Pauses `queue` (`paused`: no lease handed out, by any process the store reaches,
    /// from its next claim on; pushes still accepted) or resumes it; returns whether the
    /// flag changed (`false`: it already was so).
    fn set_paused(
        &self,
        queue: &str,
        paused: bool,
    ) -> impl Future<Output = Result<bool, OperatorError>> + Send {
        let _ = (queue, paused);
        async { Err(OperatorError::ReadOnly) }
    }

    /// Deletes the dead letters of `queue` that `query` takes; returns how many.
    fn purge_dead(
        &self,
        queue: &str,
        query: &DeadQuery,
    ) -> impl Future<Output = Result<u64, OperatorError>> + Send {
        let _ = (queue, query);
        async { Err(OperatorError::ReadOnly) }
    }

    /// The item `id` of `queue`, live or dead (`None`: there is none). By default one
    /// page of one entry from each of [`items`](Self::items) and
    /// [`dead_letters`](Self::dead_letters).
    fn item(
        &self,
        queue: &str,
        id: MessageId,
    ) -> impl Future<Output = Result<Option<StoredItem>, OperatorError>> + Send {
        async move {
            let page = match id.get().checked_sub(1) {
                Some(before) => Page::first(1).next(MessageId::new(before)),
                None => Page::first(1),
            };
            let live = self.items(queue, page).await?;
            if let Some(item) = live.into_iter().find(|i| i.id == id) {
                return Ok(Some(item));
            }
            let dead = self.dead_letters(queue, page, &DeadQuery::all()).await?;
            Ok(dead.into_iter().find(|i| i.id == id))
        }
    }
}
