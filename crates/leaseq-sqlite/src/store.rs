//! [`SqliteStore`]: the in-memory store, journaled into SQLite.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use event_listener::EventListener;
use leaseq_async::{
    Drive, LeaseLost, MemoryStore, MemoryTicket, MemoryWaiting, Push, PushError, Runtime, Store,
    Taken,
};
use leaseq_core::{
    Acked, CancelError, DeadLetter, Event, Extended, Failure, MessageId, Nacked, Reason,
    ReceiptError, RedriveError, Stats, Timestamp,
};

use crate::codec::Codec;
use crate::journal::{Journal, Op};

/// A lease held from a [`SqliteStore`].
#[derive(Debug)]
pub struct SqliteTicket {
    inner: MemoryTicket,
    id: MessageId,
}

/// A wait on a [`SqliteStore`]: the memory store's, and leases taken whose attempt is
/// being committed before they are handed out.
pub struct SqliteWaiting<T> {
    inner: MemoryWaiting,
    held: Option<(u64, Vec<Taken<T, SqliteTicket>>)>,
    listener: Option<EventListener>,
}

// Nothing in it is ever pinned (the leases are moved out, never polled).
impl<T> Unpin for SqliteWaiting<T> {}

impl<T> Default for SqliteWaiting<T> {
    fn default() -> Self {
        SqliteWaiting {
            inner: MemoryWaiting::default(),
            held: None,
            listener: None,
        }
    }
}

impl<T> std::fmt::Debug for SqliteWaiting<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteWaiting")
            .field("held", &self.held.as_ref().map(|(s, v)| (*s, v.len())))
            .finish_non_exhaustive()
    }
}

/// A durable store on one machine: a [`MemoryStore`] (the core does all the policy:
/// leases, attempts, backoff, dead letters, keys, levels) whose durable facts are journaled
/// into a SQLite file by one writer thread with group commit. Open one with
/// [`open`](crate::open).
pub struct SqliteStore<T, R, C> {
    pub(crate) inner: Arc<MemoryStore<T, R>>,
    pub(crate) codec: C,
    pub(crate) journal: Arc<Journal>,
    /// Wall-clock nanoseconds minus the runtime's clock, fixed at open: times on disk are
    /// wall-clock, so that they mean the same to the next process.
    pub(crate) offset: i128,
}

impl<T, R, C> Drop for SqliteStore<T, R, C> {
    fn drop(&mut self) {
        self.journal.stop();
    }
}

pub(crate) fn wall_now() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

fn ready_now<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    match f
        .as_mut()
        .poll(&mut Context::from_waker(std::task::Waker::noop()))
    {
        Poll::Ready(out) => out,
        Poll::Pending => unreachable!("the memory store's futures are ready on their first poll"),
    }
}

impl<T: Clone + Send + 'static, R: Runtime, C: Codec<T>> SqliteStore<T, R, C> {
    /// A time on the runtime's clock as wall-clock nanoseconds.
    pub(crate) fn to_disk(&self, t: Timestamp) -> i64 {
        (t.as_nanos() as i128 + self.offset).clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }

    /// The memory store inside (for what only it shows: items, heartbeats, invariants).
    pub fn memory(&self) -> &Arc<MemoryStore<T, R>> {
        &self.inner
    }

    /// Transactions committed so far (each holds every change queued since the one before).
    pub fn commits(&self) -> u64 {
        self.journal
            .commits
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether a commit failed (I/O error, disk full): the file then no longer follows the
    /// queue (the queue itself goes on in memory).
    pub fn journal_failed(&self) -> bool {
        self.journal.failed()
    }

    /// Completes once every change so far is durable.
    pub async fn sync(&self) {
        self.journal.committed(self.journal.last()).await
    }

    /// The dead letters, oldest first: a snapshot (each item cloned).
    pub fn dead_letters(&self) -> Vec<DeadLetter<T>> {
        self.inner
            .with_core(|core, _| core.dead_letters().cloned().collect())
    }

    /// Puts a dead letter back, visible at once, attempts reset; durable once it returns.
    pub async fn redrive(&self, id: MessageId) -> Result<MessageId, RedriveError> {
        let r = self
            .inner
            .with_core(|core, now| core.redrive(id, now).map(|id| (id, now)));
        let (id, now) = r?;
        let seq = self.journal.submit([Op::Revive {
            id: id.get(),
            visible_at: self.to_disk(now),
        }]);
        self.journal.committed(seq).await;
        Ok(id)
    }

    /// Removes every dead letter and hands them over; durable once it returns.
    pub async fn take_dead_letters(&self) -> Vec<DeadLetter<T>> {
        let letters = self.inner.with_core(|core, _| core.take_dead_letters());
        let seq = self
            .journal
            .submit(letters.iter().map(|l| Op::Delete { id: l.id.get() }));
        self.journal.committed(seq).await;
        letters
    }

    /// Journals what the core's events say happened by itself (dead letters of leases or
    /// items that ran out, items replaced); returns the sequence number to wait for.
    fn journal_events(&self) -> u64 {
        let ops = self.inner.with_core(|core, _| {
            let mut ops = Vec::new();
            while let Some(event) = core.poll_event() {
                match event {
                    Event::DeadLettered { id, .. } => {
                        if let Some(d) = core.get_dead_letter(id) {
                            ops.push((id, d.attempts, d.reason, d.last_error.clone(), d.at));
                        }
                    }
                    Event::Replaced { id, .. } => {
                        ops.push((id, 0, Reason::Released, None, Timestamp::MAX))
                    }
                    _ => {}
                }
            }
            ops
        });
        if ops.is_empty() {
            return self.journal.last();
        }
        self.journal
            .submit(ops.into_iter().map(|(id, attempts, reason, error, at)| {
                if at == Timestamp::MAX {
                    Op::Delete { id: id.get() }
                } else {
                    Op::Dead {
                        id: id.get(),
                        attempts,
                        reason: reason_code(reason),
                        error,
                        at: self.to_disk(at),
                    }
                }
            }))
    }

    /// Journals a nack's result.
    fn journal_nacked(&self, id: MessageId, r: &Nacked, error: Option<String>) -> u64 {
        match *r {
            Nacked::Retrying {
                visible_at,
                attempts,
            } => self.journal.submit([Op::Retry {
                id: id.get(),
                attempts,
                visible_at: self.to_disk(visible_at),
                error,
            }]),
            _ => self.journal_events(),
        }
    }

    /// Wraps leases just taken and journals their attempts; the sequence to wait for.
    fn record_taken(
        &self,
        taken: impl IntoIterator<Item = Taken<T, MemoryTicket>>,
        out: &mut Vec<Taken<T, SqliteTicket>>,
    ) -> u64 {
        let start = out.len();
        out.extend(taken.into_iter().map(wrap));
        self.journal.submit(out[start..].iter().map(|t| Op::Taken {
            id: t.id.get(),
            attempts: t.attempt,
        }))
    }
}

fn wrap<T>(t: Taken<T, MemoryTicket>) -> Taken<T, SqliteTicket> {
    Taken {
        item: t.item,
        id: t.id,
        attempt: t.attempt,
        deadline: t.deadline,
        expires_at: t.expires_at,
        ticket: SqliteTicket {
            inner: t.ticket,
            id: t.id,
        },
    }
}

/// A reason's code on disk: its position in [`Reason::ALL`].
pub(crate) fn reason_code(reason: Reason) -> u8 {
    Reason::ALL.iter().position(|r| *r == reason).unwrap_or(0) as u8
}

/// The reason of a code on disk (an unknown one reads as "dropped").
pub(crate) fn reason_of(code: i64) -> Reason {
    usize::try_from(code)
        .ok()
        .and_then(|i| Reason::ALL.get(i).copied())
        .unwrap_or(Reason::Dropped)
}

impl<T: Clone + Send + 'static, R: Runtime, C: Codec<T>> Store<T> for SqliteStore<T, R, C> {
    type Runtime = R;
    type Ticket = SqliteTicket;
    type Waiting = SqliteWaiting<T>;

    fn runtime(&self) -> &R {
        self.inner.runtime()
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn visibility(&self) -> Duration {
        self.inner.visibility()
    }

    fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    fn close(&self) {
        self.inner.close()
    }

    fn handle_added(&self) {
        self.inner.handle_added()
    }

    fn handle_dropped(&self) {
        self.inner.handle_dropped()
    }

    fn try_push(&self, item: T, push: &Push) -> Result<MessageId, PushError<T>> {
        // Encoded before any lock is taken.
        let payload = match self.codec.encode(&item) {
            Ok(p) => p,
            Err(e) => {
                return Err(PushError::Encode {
                    item,
                    error: e.to_string(),
                })
            }
        };
        let (delay, ttl, options) = push.parts();
        let timed = !delay.is_zero() || ttl.is_some();
        let now = if timed {
            self.inner.runtime().now()
        } else {
            Timestamp::ZERO
        };
        let key = options.key_bytes().map(<[u8]>::to_vec);
        let (priority, replace) = (options.priority, options.replace_pending);
        let id = self.inner.try_push(item, push)?;
        self.journal.submit([Op::Insert {
            id: id.get(),
            payload,
            visible_at: if delay.is_zero() {
                0
            } else {
                self.to_disk(now.saturating_add(delay))
            },
            expires_at: ttl.map(|ttl| self.to_disk(now.saturating_add(ttl))),
            priority,
            key,
        }]);
        if replace {
            self.journal_events();
        }
        Ok(id)
    }

    fn cancel(
        &self,
        id: MessageId,
        leased: bool,
    ) -> impl Future<Output = Result<T, CancelError>> + Send {
        let r = ready_now(self.inner.cancel(id, leased));
        let seq = r
            .is_ok()
            .then(|| self.journal.submit([Op::Delete { id: id.get() }]));
        async move {
            if let Some(seq) = seq {
                self.journal.committed(seq).await;
            }
            r
        }
    }

    fn try_push_batch(
        &self,
        items: &mut dyn Iterator<Item = T>,
    ) -> Result<Vec<MessageId>, PushError<T>> {
        // One by one: each item is encoded, then pushed (a plain push: the inbox).
        let mut ids = Vec::new();
        let plain = Push::new();
        for item in items {
            match self.try_push(item, &plain) {
                Ok(id) => ids.push(id),
                Err(e) => return Err(e),
            }
        }
        Ok(ids)
    }

    fn poll_space(&self, waiting: &mut SqliteWaiting<T>, cx: &mut Context<'_>) -> Poll<()> {
        self.inner.poll_space(&mut waiting.inner, cx)
    }

    fn poll_take(
        self: &Arc<Self>,
        waiting: &mut SqliteWaiting<T>,
        cx: &mut Context<'_>,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<Taken<T, SqliteTicket>>,
    ) -> Poll<bool> {
        if waiting.held.is_none() {
            let mut got = Vec::new();
            match self
                .inner
                .poll_take(&mut waiting.inner, cx, max, heartbeat, &mut got)
            {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(false) => return Poll::Ready(false),
                Poll::Ready(true) => {}
            }
            let mut held = Vec::with_capacity(got.len());
            let seq = self.record_taken(got, &mut held);
            waiting.held = Some((seq, held));
        }
        let seq = waiting.held.as_ref().map_or(0, |h| h.0);
        // A delivery is recorded before it is handed out.
        if self
            .journal
            .poll_committed(seq, &mut waiting.listener, cx)
            .is_pending()
        {
            return Poll::Pending;
        }
        let (_, held) = waiting.held.take().unwrap_or_default();
        out.extend(held);
        Poll::Ready(true)
    }

    fn poll_take_one(
        self: &Arc<Self>,
        waiting: &mut SqliteWaiting<T>,
        cx: &mut Context<'_>,
        heartbeat: bool,
    ) -> Poll<Option<Taken<T, SqliteTicket>>> {
        if waiting.held.is_none() {
            let taken = match self.inner.poll_take_one(&mut waiting.inner, cx, heartbeat) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Ready(Some(taken)) => taken,
            };
            let mut held = Vec::with_capacity(1);
            let seq = self.record_taken([taken], &mut held);
            waiting.held = Some((seq, held));
        }
        let seq = waiting.held.as_ref().map_or(0, |h| h.0);
        if self
            .journal
            .poll_committed(seq, &mut waiting.listener, cx)
            .is_pending()
        {
            return Poll::Pending;
        }
        let (_, mut held) = waiting.held.take().unwrap_or_default();
        Poll::Ready(held.pop())
    }

    fn try_take(
        self: &Arc<Self>,
        max: usize,
        heartbeat: bool,
        out: &mut Vec<Taken<T, SqliteTicket>>,
    ) -> usize {
        let mut got = Vec::new();
        let n = self.inner.try_take(max, heartbeat, &mut got);
        if n > 0 {
            // Never waits for items, but does wait for their attempts to be committed.
            let seq = self.record_taken(got, out);
            self.journal.wait_blocking(seq);
        }
        n
    }

    fn poll_empty(&self, waiting: &mut SqliteWaiting<T>, cx: &mut Context<'_>) -> Poll<()> {
        self.inner.poll_empty(&mut waiting.inner, cx)
    }

    fn stop_waiting(&self, waiting: &mut SqliteWaiting<T>) {
        self.inner.stop_waiting(&mut waiting.inner);
        waiting.listener = None;
        // Leases taken for a receive that was dropped before their commit: handed back
        // (reason "dropped", the attempt counted: it is on its way to the disk).
        if let Some((_, held)) = waiting.held.take() {
            for taken in held {
                self.hand_back(taken.ticket);
            }
        }
    }

    fn ack(
        &self,
        ticket: SqliteTicket,
    ) -> impl Future<Output = Result<Acked, ReceiptError>> + Send {
        let id = ticket.id;
        let r = ready_now(self.inner.ack(ticket.inner));
        let seq = r
            .is_ok()
            .then(|| self.journal.submit([Op::Delete { id: id.get() }]));
        async move {
            if let Some(seq) = seq {
                self.journal.committed(seq).await;
            }
            r
        }
    }

    fn ack_many(
        &self,
        tickets: Vec<SqliteTicket>,
    ) -> impl Future<Output = Vec<Result<Acked, ReceiptError>>> + Send {
        let ids: Vec<MessageId> = tickets.iter().map(|t| t.id).collect();
        let results = ready_now(
            self.inner
                .ack_many(tickets.into_iter().map(|t| t.inner).collect()),
        );
        let seq = self.journal.submit(
            ids.iter()
                .zip(&results)
                .filter(|(_, r)| r.is_ok())
                .map(|(id, _)| Op::Delete { id: id.get() }),
        );
        async move {
            self.journal.committed(seq).await;
            results
        }
    }

    fn nack(
        &self,
        ticket: SqliteTicket,
        failure: Failure,
    ) -> impl Future<Output = Result<Nacked, ReceiptError>> + Send {
        let id = ticket.id;
        let error = failure.error.clone();
        let r = ready_now(self.inner.nack(ticket.inner, failure));
        let seq = r.as_ref().ok().map(|n| self.journal_nacked(id, n, error));
        async move {
            if let Some(seq) = seq {
                self.journal.committed(seq).await;
            }
            r
        }
    }

    fn dead_letter(
        &self,
        ticket: SqliteTicket,
        error: String,
    ) -> impl Future<Output = Result<u32, ReceiptError>> + Send {
        let r = ready_now(self.inner.dead_letter(ticket.inner, error));
        let seq = r.is_ok().then(|| self.journal_events());
        async move {
            if let Some(seq) = seq {
                self.journal.committed(seq).await;
            }
            r
        }
    }

    fn extend(
        &self,
        ticket: &mut SqliteTicket,
        visibility: Duration,
    ) -> impl Future<Output = Result<Extended, ReceiptError>> + Send {
        // Leases are not durable: an extension changes nothing on disk, unless it released
        // the item.
        let id = ticket.id;
        let r = ready_now(self.inner.extend(&mut ticket.inner, visibility));
        let seq = match &r {
            Ok(Extended::Released(n)) => Some(self.journal_nacked(id, n, None)),
            _ => None,
        };
        async move {
            if let Some(seq) = seq {
                self.journal.committed(seq).await;
            }
            r
        }
    }

    fn hand_back(&self, ticket: SqliteTicket) {
        let id = ticket.id;
        if let Ok(n) = ready_now(self.inner.nack(ticket.inner, Failure::dropped())) {
            self.journal_nacked(id, &n, None);
        }
    }

    fn stop_heartbeat(&self, ticket: &mut SqliteTicket) {
        self.inner.stop_heartbeat(&mut ticket.inner)
    }

    fn has_heartbeat(&self, ticket: &SqliteTicket) -> bool {
        self.inner.has_heartbeat(&ticket.inner)
    }

    fn is_lease_lost(&self, ticket: &SqliteTicket, deadline: Timestamp) -> bool {
        self.inner.is_lease_lost(&ticket.inner, deadline)
    }

    fn lease_lost(&self, ticket: &SqliteTicket, deadline: Timestamp) -> LeaseLost {
        self.inner.lease_lost(&ticket.inner, deadline)
    }

    fn drive(&self) -> impl Future<Output = Drive> + Send {
        let drive = ready_now(self.inner.drive());
        // Dead letters the time step made (leases or items that ran out).
        self.journal_events();
        std::future::ready(drive)
    }

    fn listen_driver(&self) -> EventListener {
        self.inner.listen_driver()
    }

    fn stats(&self) -> Stats {
        self.inner.stats()
    }

    fn synced(&self) -> impl Future<Output = ()> + Send {
        let seq = self.journal.last();
        async move { self.journal.committed(seq).await }
    }
}
