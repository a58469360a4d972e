//! Pushes inside the caller's transaction: [`PgStore::push_in`] and
//! [`PgStore::push_batch_in`]. What needs no round trip is checked here, as `try_push`
//! checks it (closed, priority, time to live, key length, encoding, size), so such a
//! refusal sends nothing; the rest (capacity, keys, the insert and its `NOTIFY`) is one
//! call of the schema's `push_rows` on the caller's client (`tx_sql.rs`, `tx_client.rs`),
//! which answers a refusal instead of raising it: the caller's transaction stays usable.
//!
//! Nothing goes through this process's writer: the rows are the caller's transaction's,
//! visible to everyone (and this process's claimer woken, by the notification) if and when
//! it commits. Their ids come from the schema's `tx_ids` sequence (`tx_sql.rs` says why).

use leaseq_async::{CodecError, Push};
use leaseq_core::{KeyWindow, MessageId, UniqueKey, MAX_PRIORITY};

use crate::counters::Counters;
use crate::db::micros;
use crate::push::KEY_WINDOWS;
use crate::store::PgStore;
use crate::tx_client::sealed::{Call, Reply};
use crate::tx_client::TxClient;
use crate::tx_error::{TxBatchError, TxDbError, TxPushError};

/// A refusal, before the item it refuses is attached.
enum Refused {
    Closed,
    Encode(CodecError),
    TooLarge { size: usize, max: usize },
    Priority(u8),
    KeyTooLong(usize),
    Expired,
    Duplicate(MessageId),
    Full,
    KeyContended,
    Unsupported(&'static str),
    Db(TxDbError),
}

impl Refused {
    fn with<T>(self, item: T) -> TxPushError<T> {
        match self {
            Refused::Closed => TxPushError::Closed(item),
            Refused::Encode(error) => TxPushError::Encode { item, error },
            Refused::TooLarge { size, max } => TxPushError::TooLarge { item, size, max },
            Refused::Priority(level) => TxPushError::PriorityOutOfRange { item, level },
            Refused::KeyTooLong(len) => TxPushError::KeyTooLong { item, len },
            Refused::Expired => TxPushError::AlreadyExpired(item),
            Refused::Duplicate(existing) => TxPushError::DuplicateKey { item, existing },
            Refused::Full => TxPushError::Full(item),
            Refused::KeyContended => TxPushError::KeyContended(item),
            Refused::Unsupported(what) => TxPushError::Unsupported { item, what },
            Refused::Db(error) => TxPushError::Db { item, error },
        }
    }

    /// The refusal `push_rows` named (`detail` as it sent it).
    fn from_sql(refusal: &str, detail: Option<i64>, level: u8, max: usize) -> Refused {
        let n = detail.unwrap_or(0).max(0) as u64;
        match refusal {
            "full" => Refused::Full,
            "duplicate" => Refused::Duplicate(MessageId::new(n)),
            "key_busy" => Refused::KeyContended,
            "too_large" => Refused::TooLarge {
                size: usize::try_from(n).unwrap_or(usize::MAX),
                max,
            },
            "priority" => Refused::Priority(level),
            "key_length" => Refused::KeyTooLong(usize::try_from(n).unwrap_or(usize::MAX)),
            "expired" => Refused::Expired,
            "isolation" => Refused::Unsupported(
                "a bounded queue takes transactional pushes in READ COMMITTED transactions only",
            ),
            other => Refused::Db(TxDbError::Unexpected(format!(
                "refusal {other:?} (detail {detail:?})"
            ))),
        }
    }
}

impl<T: Clone + Send + Sync + 'static> PgStore<T> {
    /// Pushes `item` inside the caller's transaction `client` (see [`TxClient`]: a
    /// tokio-postgres or deadpool transaction, or an sqlx one with the feature `sqlx`), as
    /// `push` says (delay, priority, time to live, unique key, `replace_pending`): the item
    /// is visible, and idle workers of every process are woken (a `NOTIFY` sent at commit),
    /// if and when that transaction commits; never if it rolls back. Returns its id.
    ///
    /// Checked as every push is: the priority level, the time to live, the key's length,
    /// the encoding and [`Options::max_item_size`](crate::Options::max_item_size) before
    /// anything is sent; the queue's capacity (room taken from the queue's ledger,
    /// this transaction's own pushes included) and a held key by the statement. A
    /// refusal hands the item back and leaves the transaction as it was
    /// ([`TxPushError::transaction_intact`]); a failed statement
    /// ([`TxPushError::Db`]) most likely aborted it.
    ///
    /// One round trip (the schema's `push_rows`). Not ordered with this process's own
    /// `push`es, which its writer inserts. A delay counts from the push, not the commit.
    /// On a bounded queue the transaction holds the queue's ledger row until it ends
    /// (as each insert of the writer does for one statement), so keep such transactions
    /// short, do not await this queue's own `push` (or a redrive) in it before it ends
    /// (that insert waits for the lock your transaction holds), and use `READ COMMITTED`
    /// (the default): another isolation level is refused ([`TxPushError::Unsupported`]).
    /// This process's `pushed` counter counts the item when the statement succeeds, also
    /// if the transaction then rolls back.
    ///
    /// ```no_run
    /// # async fn f(queue: leaseq_postgres::PgQueue<String>, mut db: tokio_postgres::Client)
    /// # -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use leaseq_async::Push;
    ///
    /// let tx = db.transaction().await?;
    /// tx.execute("UPDATE orders SET state = 'paid' WHERE id = $1", &[&42_i64]).await?;
    /// let push = Push::new().key("receipt:42").delay(Duration::from_secs(5));
    /// queue.store().push_in(&tx, "send receipt 42".to_string(), push).await?;
    /// tx.commit().await?; // the order and its job, together
    /// # Ok(()) }
    /// ```
    pub async fn push_in<C: TxClient>(
        &self,
        client: C,
        item: T,
        push: Push,
    ) -> Result<MessageId, TxPushError<T>> {
        let (ids, refused) = self
            .push_rows_in(client, std::slice::from_ref(&item), &push)
            .await;
        match (ids.first(), refused) {
            (_, Some(refused)) => Err(refused.with(item)),
            (Some(id), None) => Ok(*id),
            (None, None) => Err(TxPushError::Db {
                item,
                error: TxDbError::Unexpected("no id for the item".into()),
            }),
        }
    }

    /// Pushes `items` inside the caller's transaction `client`, each as `push` says, in one
    /// statement (see [`push_in`](Self::push_in)); their ids in order. Stops at the first
    /// refusal: the items before it are pushed in the transaction (they commit with it),
    /// the refused one and the rest are handed back ([`TxBatchError`]). With a unique key,
    /// the first item takes it and the next is refused as a duplicate.
    pub async fn push_batch_in<C, I>(
        &self,
        client: C,
        items: I,
        push: Push,
    ) -> Result<Vec<MessageId>, TxBatchError<T>>
    where
        C: TxClient,
        I: IntoIterator<Item = T>,
    {
        let items: Vec<T> = items.into_iter().collect();
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let (accepted, refused) = self.push_rows_in(client, &items, &push).await;
        let Some(refused) = refused else {
            if accepted.len() == items.len() {
                return Ok(accepted);
            }
            let refused = Refused::Db(TxDbError::Unexpected(format!(
                "{} ids for {} items",
                accepted.len(),
                items.len()
            )));
            return split(Vec::new(), items, 0, refused);
        };
        let at = accepted.len().min(items.len() - 1);
        split(accepted, items, at, refused)
    }

    /// Checks and encodes `items` (stopping at the first refusal), then pushes those that
    /// passed in one `push_rows` call. The refusal, if any, is the item at index
    /// `ids.len()`'s.
    async fn push_rows_in<C: TxClient>(
        &self,
        client: C,
        items: &[T],
        push: &Push,
    ) -> (Vec<MessageId>, Option<Refused>) {
        let (delay, ttl, options) = push.parts();
        if self.life.is_closed() || self.life.is_stopped() {
            return (Vec::new(), Some(Refused::Closed));
        }
        if options.priority > MAX_PRIORITY {
            return (Vec::new(), Some(Refused::Priority(options.priority)));
        }
        if let Some(what) = crate::push::unsupported(push) {
            return (Vec::new(), Some(Refused::Unsupported(what)));
        }
        let Some((window, window_us)) =
            crate::keyed::window_columns(push.window().unwrap_or(KeyWindow::Live))
        else {
            return (Vec::new(), Some(Refused::Unsupported(KEY_WINDOWS)));
        };
        if ttl.is_some_and(|ttl| ttl.is_zero() || ttl <= delay) {
            return (Vec::new(), Some(Refused::Expired));
        }
        let key = match (options.has_key(), options.key_bytes()) {
            (_, Some(key)) => Some(key.to_vec()),
            (false, None) => None,
            // The exact length is the core's to keep; it is more than the most allowed.
            (true, None) => {
                return (
                    Vec::new(),
                    Some(Refused::KeyTooLong(UniqueKey::MAX_LEN + 1)),
                )
            }
        };
        let max = self.db.options.max_item_size;
        let mut payloads = Vec::with_capacity(items.len());
        let mut stopped = None;
        for item in items {
            match self.db.codec.encode(item) {
                Ok(p) if p.len() > max => {
                    let size = p.len();
                    stopped = Some(Refused::TooLarge { size, max });
                    break;
                }
                Ok(p) => payloads.push(p),
                Err(e) => {
                    stopped = Some(Refused::Encode(e));
                    break;
                }
            }
        }
        if payloads.is_empty() {
            return (Vec::new(), stopped);
        }
        let sent = payloads.len();
        let call = Call {
            sql: crate::tx_sql::push_rows(&self.db.options.schema),
            queue: self.db.queue.clone(),
            payloads,
            priority: i32::from(options.priority),
            delay_us: micros(delay),
            ttl_us: ttl.map(micros),
            key,
            replace: options.replace_pending,
            max_item_size: i64::try_from(max).unwrap_or(i64::MAX),
            capacity: self
                .db
                .config
                .capacity()
                .map(|c| i64::try_from(c).unwrap_or(i64::MAX)),
            window,
            window_us,
        };
        let Reply {
            ids,
            refusal,
            detail,
        } = match client.push_rows(&call).await {
            Ok(reply) => reply,
            Err(e) => return (Vec::new(), Some(Refused::Db(e))),
        };
        let ids: Vec<MessageId> = ids
            .into_iter()
            .map(|id| MessageId::new(id as u64))
            .collect();
        Counters::add(&self.counters.pushed, ids.len() as u64);
        match refusal {
            Some(r) => {
                let refused = Refused::from_sql(&r, detail, options.priority, max);
                (ids, Some(refused))
            }
            None if ids.len() == sent => (ids, stopped),
            None => {
                let what = format!("{} ids for {sent} rows", ids.len());
                (ids, Some(Refused::Db(TxDbError::Unexpected(what))))
            }
        }
    }
}

/// The batch's error at index `at` (within the batch): the items before it were
/// `accepted`, the one at `at` is refused, the rest handed back.
fn split<T>(
    accepted: Vec<MessageId>,
    mut items: Vec<T>,
    at: usize,
    refused: Refused,
) -> Result<Vec<MessageId>, TxBatchError<T>> {
    let rest = items.split_off((at + 1).min(items.len()));
    match items.pop() {
        Some(item) => Err(TxBatchError {
            accepted,
            error: refused.with(item),
            rest,
        }),
        // Never: `at` is within a batch of at least one item.
        None => Ok(accepted),
    }
}
