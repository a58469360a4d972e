//! [`QueueHandle`]: one queue of this process behind an object-safe adapter, so that
//! [`LocalOperator`](super::LocalOperator) holds queues of any item type, store and runtime
//! side by side. [`Held`] implements it over a [`LeaseQueue`] through the `Store` methods
//! every store has, its items shown as the bytes a [`Render`] makes of them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::SystemTime;

use leaseq_core::{DeadLetter, ItemState, ItemView, MessageId, Timestamp};

use crate::admin_error::AdminError;
use crate::codec::CodecError;
use crate::dead_filter::DeadFilter;
use crate::history::{Finished, HistoryQuery};
use crate::page::Page;
use crate::queue::LeaseQueue;
use crate::runtime::Runtime;
use crate::schedule_store::ScheduleState;
use crate::store::Store;
use crate::stored::{StoredCounts, StoredItem, StoredState};

use super::super::queue_calls::{self, failed};
use super::super::{DeadQuery, OperatorError};

/// A boxed future of an operator answer.
pub(super) type Answer<'a, T> = Pin<Box<dyn Future<Output = Result<T, OperatorError>> + Send + 'a>>;

/// How an item is shown: its bytes.
pub(super) type Render<T> = Arc<dyn Fn(&T) -> Vec<u8> + Send + Sync>;

/// How an item names its job kind, for a kind filter (`None`: it has none).
pub(super) type KindOf<T> = fn(&T) -> Option<&str>;

/// One queue of this process, type-erased: what [`Operator`](super::super::Operator) asks
/// of a queue, each answer boxed.
pub(super) trait QueueHandle: Send + Sync {
    /// Its counts, its name and pause flag with them.
    fn counts(&self) -> Answer<'_, StoredCounts>;
    /// Its live items of `page`.
    fn items(&self, page: Page) -> Answer<'_, Vec<StoredItem>>;
    /// Its dead letters that `query` takes, of `page`.
    fn dead_letters<'a>(&'a self, page: Page, query: &'a DeadQuery) -> Answer<'a, Vec<StoredItem>>;
    /// Its schedules.
    fn schedules(&self) -> Answer<'_, Vec<ScheduleState>>;
    /// Its record of finished jobs.
    fn history<'a>(&'a self, query: &'a HistoryQuery) -> Answer<'a, Vec<Finished>>;
    /// Redrives the dead letter `id`.
    fn redrive(&self, id: MessageId) -> Answer<'_, ()>;
    /// Redrives the dead letters `query` takes.
    fn redrive_dead<'a>(&'a self, query: &'a DeadQuery) -> Answer<'a, u64>;
    /// Deletes the dead letters `query` takes.
    fn purge_dead<'a>(&'a self, query: &'a DeadQuery) -> Answer<'a, u64>;
    /// Deletes every waiting item.
    fn purge(&self) -> Answer<'_, u64>;
    /// Pauses or resumes it.
    fn set_paused(&self, paused: bool) -> Answer<'_, bool>;
    /// Cancels the waiting item `id` (`false`: refused, it is not waiting).
    fn cancel(&self, id: MessageId) -> Answer<'_, bool>;
}

/// A [`LeaseQueue`] handle with its rendering and kind.
pub(super) struct Held<T, R, S> {
    pub(super) queue: LeaseQueue<T, R, S>,
    pub(super) render: Render<T>,
    pub(super) kind: Option<KindOf<T>>,
}

/// Reads runtime timestamps as wall-clock times, from one reading of both clocks.
struct Clock {
    runtime: Timestamp,
    wall: SystemTime,
}

impl Clock {
    fn of<R: Runtime>(rt: &R) -> Clock {
        Clock {
            runtime: rt.now(),
            wall: SystemTime::now(),
        }
    }

    fn wall(&self, t: Timestamp) -> SystemTime {
        if t >= self.runtime {
            self.wall + t.saturating_duration_since(self.runtime)
        } else {
            let back = self.runtime.saturating_duration_since(t);
            self.wall
                .checked_sub(back)
                .unwrap_or(SystemTime::UNIX_EPOCH)
        }
    }
}

impl<T, R, S> Held<T, R, S>
where
    T: Send + Sync + 'static,
    R: Runtime,
    S: Store<T, Runtime = R>,
{
    /// A dead letter filter for `query`: the kind through this queue's [`KindOf`] (none:
    /// a kind filter takes nothing, see [`DeadFilter::matches_none`]'s empty kind).
    fn filter(&self, query: &DeadQuery) -> DeadFilter<T> {
        let mut f = DeadFilter::all();
        if let Some(r) = query.reason {
            f = f.reason(r);
        }
        if let Some(k) = &query.kind {
            f = match self.kind {
                Some(of) => f.kind_by(k, of),
                None => f.kind_by("", |_| None),
            };
        }
        f
    }

    fn live(&self, view: ItemView, clock: &Clock) -> StoredItem {
        let (state, deadline) = match view.state {
            ItemState::Ready => (StoredState::Ready, None),
            ItemState::Delayed => (StoredState::Delayed, None),
            ItemState::InFlight { deadline } => (StoredState::InFlight, Some(deadline)),
        };
        let mut item = StoredItem::new(view.id, state, 0);
        item.attempts = view.attempts;
        item.priority = view.priority;
        item.key = view.key.map(|k| k.as_bytes().to_vec());
        item.deadline = deadline.map(|d| clock.wall(d));
        item.expires_at = view.expires_at.map(|d| clock.wall(d));
        item
    }

    fn dead(&self, letter: DeadLetter<Result<T, CodecError>>, clock: &Clock) -> StoredItem {
        let bytes = match &letter.item {
            Ok(item) => Some((self.render)(item)),
            Err(_) => None,
        };
        let size = bytes.as_ref().map_or(0, |b| b.len() as u64);
        let mut item = StoredItem::new(letter.id, StoredState::Dead, size);
        item.payload = bytes;
        item.attempts = letter.attempts;
        item.priority = letter.priority;
        item.key = letter.key.map(|k| k.as_bytes().to_vec());
        item.expires_at = letter.expires_at.map(|d| clock.wall(d));
        item.reason = Some(letter.reason);
        item.last_error = letter.last_error;
        item.dead_at = Some(clock.wall(letter.at));
        item
    }
}

impl<T, R, S> QueueHandle for Held<T, R, S>
where
    T: Send + Sync + 'static,
    R: Runtime,
    S: Store<T, Runtime = R>,
{
    fn counts(&self) -> Answer<'_, StoredCounts> {
        Box::pin(async move {
            let s = self.queue.refresh_stats().await.map_err(failed)?;
            let name = self.queue.name();
            let counts = StoredCounts::new(name, s.ready, s.delayed, s.in_flight, s.dead);
            Ok(counts.with_paused(s.paused))
        })
    }

    fn items(&self, page: Page) -> Answer<'_, Vec<StoredItem>> {
        Box::pin(async move {
            let views = self.queue.peek(page).await.map_err(failed)?;
            let clock = Clock::of(self.queue.runtime());
            Ok(views.into_iter().map(|v| self.live(v, &clock)).collect())
        })
    }

    fn dead_letters<'a>(&'a self, page: Page, query: &'a DeadQuery) -> Answer<'a, Vec<StoredItem>> {
        Box::pin(async move {
            let filter = self.filter(query);
            let clock = Clock::of(self.queue.runtime());
            let mut out = Vec::new();
            let mut at = page;
            // Pages of the store's, filtered here, until `page.limit` are taken.
            at.limit = page.limit.clamp(1, 1000);
            while out.len() < page.limit {
                let letters = self.queue.dead_letters(at).await.map_err(failed)?;
                let (Some(last), full) = (letters.last().map(|l| l.id), letters.len() >= at.limit)
                else {
                    break;
                };
                for letter in letters {
                    let takes = filter.admits_reason(letter.reason)
                        && (filter.wanted_kind().is_none()
                            || letter.item.as_ref().is_ok_and(|i| filter.admits_item(i)));
                    if takes && out.len() < page.limit {
                        out.push(self.dead(letter, &clock));
                    }
                }
                if !full {
                    break;
                }
                at = at.next(last);
            }
            Ok(out)
        })
    }

    fn schedules(&self) -> Answer<'_, Vec<ScheduleState>> {
        Box::pin(async move { self.queue.schedules().await.map_err(failed) })
    }

    fn history<'a>(&'a self, query: &'a HistoryQuery) -> Answer<'a, Vec<Finished>> {
        Box::pin(async move { self.queue.history(query.clone()).await.map_err(failed) })
    }

    fn redrive(&self, id: MessageId) -> Answer<'_, ()> {
        Box::pin(queue_calls::redrive(&self.queue, id))
    }

    fn redrive_dead<'a>(&'a self, query: &'a DeadQuery) -> Answer<'a, u64> {
        Box::pin(queue_calls::redrive_dead(&self.queue, self.filter(query)))
    }

    fn purge_dead<'a>(&'a self, query: &'a DeadQuery) -> Answer<'a, u64> {
        Box::pin(queue_calls::purge_dead(&self.queue, self.filter(query)))
    }

    fn purge(&self) -> Answer<'_, u64> {
        Box::pin(queue_calls::purge(&self.queue))
    }

    fn set_paused(&self, paused: bool) -> Answer<'_, bool> {
        Box::pin(queue_calls::set_paused(&self.queue, paused))
    }

    fn cancel(&self, id: MessageId) -> Answer<'_, bool> {
        Box::pin(async move {
            match self.queue.cancel(id).await {
                Ok(_) => Ok(true),
                Err(AdminError::Refused(_)) => Ok(false),
                Err(AdminError::Store(e)) => Err(failed(e)),
            }
        })
    }
}
