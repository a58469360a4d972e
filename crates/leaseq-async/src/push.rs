//! How to push an item: delay, time to live, priority level, unique key.

use std::time::Duration;

use leaseq_core::{FlowKey, FlowKeys, KeyWindow, PushOptions, Timestamp};

/// What a push with both flow keys and a key window is refused as.
const WINDOW_WITH_FLOW: &str = "a key window (Push::key_window) with flow keys";

/// `Push::flags`: a delay other than zero.
const DELAYED: u8 = 1;
/// `Push::flags`: a time to live.
const TTL: u8 = 1 << 1;
/// `Push::flags`: a priority level other than 0.
const LEVEL: u8 = 1 << 2;
/// `Push::flags`: a unique key (valid or not: a too-long one must reach the core's check).
const KEYED: u8 = 1 << 3;
/// `Push::flags`: a key window other than `KeyWindow::Live`.
const WINDOWED: u8 = 1 << 4;
/// `Push::flags`: flow keys.
const FLOWED: u8 = 1 << 5;

/// How an item is pushed (see [`LeaseQueue::try_push_with`](crate::LeaseQueue::try_push_with)):
/// a delay before it becomes visible, a time to live, a priority level and a unique key.
/// `Push::new()` is a plain push: visible at once, never expires, level 0, no key.
///
/// ```
/// use std::time::Duration;
/// use leaseq_async::Push;
///
/// let push = Push::new()
///     .priority(7) // delivered before every lower level
///     .key("thumbnail:photo-17") // refused while another item holds this key
///     .ttl(Duration::from_secs(600));
/// # let _ = push;
/// ```
#[derive(Clone, Debug)]
pub struct Push {
    pub(crate) delay: Duration,
    pub(crate) ttl: Option<Duration>,
    /// Priority, key and replace (their checks are the core's); delay and expiry are set
    /// from the two fields above at the push's own clock reading.
    pub(crate) options: PushOptions,
    /// What was given, one bit each (`DELAYED`, `TTL`, `LEVEL`, `KEYED`, `WINDOWED`,
    /// `FLOWED`): a push's checks (plain? keyed alone? a clock needed?) are each one test
    /// of this byte, made on every push.
    flags: u8,
    /// The key window, if `WINDOWED`.
    window: KeyWindow,
    /// The flow keys, if any were given: boxed, so that a push without them carries one
    /// null pointer (a plain push is built on the caller's path: a larger `Push` costs
    /// every push) and tests it.
    flow: Option<Box<FlowKeys>>,
}

impl Default for Push {
    fn default() -> Self {
        Push::new()
    }
}

impl Push {
    /// A plain push: visible at once, never expires, level 0, no key.
    pub const fn new() -> Self {
        Push {
            delay: Duration::ZERO,
            ttl: None,
            options: PushOptions::new(),
            flags: 0,
            window: KeyWindow::Live,
            flow: None,
        }
    }

    /// Invisible for `delay` after the push.
    pub const fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self.flags = if delay.is_zero() {
            self.flags & !DELAYED
        } else {
            self.flags | DELAYED
        };
        self
    }

    /// Useless `ttl` after the push: then never delivered again, dead-lettered as expired;
    /// no item timeout outlasts it.
    pub const fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self.flags |= TTL;
        self
    }

    /// Priority `level`, `0..=`[`MAX_PRIORITY`](leaseq_core::MAX_PRIORITY): a higher level is
    /// delivered first; within a level, in order of visibility (see the core's ordering
    /// rules). Out of range, the push is refused with the item handed back.
    pub const fn priority(mut self, level: u8) -> Self {
        self.options = self.options.priority(level);
        self.flags = if level == 0 {
            self.flags & !LEVEL
        } else {
            self.flags | LEVEL
        };
        self
    }

    /// A unique key (at most [`UniqueKey::MAX_LEN`](leaseq_core::UniqueKey::MAX_LEN)
    /// bytes): while an item with the same key is ready, delayed or in flight, the push is
    /// refused with [`PushError::DuplicateKey`](crate::PushError::DuplicateKey), which names
    /// that item. Once it is acked, dead-lettered or cancelled the key is free again.
    pub fn key(mut self, key: impl AsRef<[u8]>) -> Self {
        self.options = self.options.key(key);
        self.flags |= KEYED;
        self
    }

    /// With a [`key`](Self::key): how long the key is held ([`KeyWindow`]: while live, the
    /// default; while queued; for a period after the push, a throttle; while live and a
    /// period after; with [`replace_pending`](Self::replace_pending), a debounce). Every
    /// store honours every window (SQLite keeps them in its file, so a window holds across
    /// a restart; Postgres on the database's clock, across processes); a store that keeps
    /// keys only while items are live refuses any other with
    /// [`PushError::Unsupported`](crate::PushError::Unsupported), the item handed back.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leaseq_async::core::KeyWindow;
    /// use leaseq_async::{Config, LeaseQueue, PushError, SimRuntime};
    ///
    /// let rt = SimRuntime::new();
    /// rt.block_on({
    ///     let rt = rt.clone();
    ///     async move {
    ///         let q = LeaseQueue::with_runtime(rt, Config::new(Duration::from_secs(30))).unwrap();
    ///         // At most one report a minute, whatever becomes of the first.
    ///         let throttle = leaseq_async::Push::new()
    ///             .key("report")
    ///             .key_window(KeyWindow::Period(Duration::from_secs(60)));
    ///         let first = q.try_push_with("a", throttle.clone()).unwrap();
    ///         q.receive().await.unwrap().ack().await.unwrap();
    ///         let again = q.try_push_with("b", throttle);
    ///         assert!(matches!(again, Err(PushError::DuplicateKey { existing, .. }) if existing == first));
    ///     }
    /// });
    /// ```
    pub const fn key_window(mut self, window: KeyWindow) -> Self {
        self.window = window;
        self.flags = if matches!(window, KeyWindow::Live) {
            self.flags & !WINDOWED
        } else {
            self.flags | WINDOWED
        };
        self
    }

    /// The [`key_window`](Self::key_window) given, if other than [`KeyWindow::Live`]: what
    /// a durable store keeps beside a keyed item.
    pub fn window(&self) -> Option<KeyWindow> {
        self.windowed().then_some(self.window)
    }

    /// Whether a [`key_window`](Self::key_window) other than
    /// [`KeyWindow::Live`] was given: what a store that keeps keys only while items are
    /// live refuses.
    pub fn has_key_window(&self) -> bool {
        self.windowed()
    }

    /// Whether a key window other than [`KeyWindow::Live`] was given.
    #[inline]
    fn windowed(&self) -> bool {
        self.flags & WINDOWED != 0
    }

    /// The job kind the item counts against in concurrency and rate limits
    /// ([`LimitScope::Kind`](leaseq_core::LimitScope::Kind) of
    /// [`FlowKey::named`]`(name)`), for life: redeliveries and redrives included. See
    /// [`FlowControl`](crate::FlowControl) for the limits.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leaseq_async::core::{FlowKey, LimitScope};
    /// use leaseq_async::{Config, LeaseQueue, Push, SimRuntime};
    ///
    /// let rt = SimRuntime::new();
    /// rt.block_on({
    ///     let rt = rt.clone();
    ///     async move {
    ///         let q = LeaseQueue::with_runtime(rt, Config::new(Duration::from_secs(30))).unwrap();
    ///         // One video encode at a time, whatever else runs.
    ///         q.set_limit(LimitScope::Kind(FlowKey::named("encode")), Some(1)).await.unwrap();
    ///         q.try_push_with("video-1", Push::new().kind("encode")).unwrap();
    ///         q.try_push_with("video-2", Push::new().kind("encode")).unwrap();
    ///         q.try_push_with("mail", Push::new().kind("email")).unwrap();
    ///         let first = q.receive().await.unwrap();
    ///         assert_eq!(*first.item(), "video-1");
    ///         // video-2 waits for video-1: the next lease is the mail.
    ///         assert_eq!(*q.receive().await.unwrap().item(), "mail");
    ///         assert_eq!(q.flow_waiting().await.unwrap().on_limits, 1);
    ///     }
    /// });
    /// ```
    pub fn kind(mut self, name: impl AsRef<[u8]>) -> Self {
        self.set_flow(|k| k.kind(FlowKey::named(name)));
        self
    }

    /// The partition (a customer, a tenant) the item counts against in concurrency and rate
    /// limits ([`LimitScope::Partition`](leaseq_core::LimitScope::Partition) of
    /// [`FlowKey::named`]`(name)`), for life.
    pub fn partition(mut self, name: impl AsRef<[u8]>) -> Self {
        self.set_flow(|k| k.partition(FlowKey::named(name)));
        self
    }

    /// The ordered group ([`FlowKey::named`]`(name)`) the item goes in: a group's items are
    /// handed out strictly in push order, one at a time (the next waits until the one
    /// before is acked, cancelled or dead-lettered; what a dead letter does to its group is
    /// the queue's [`GroupDeadLetter`](leaseq_core::GroupDeadLetter)), and groups take
    /// turns, so that one large group does not starve the others.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leaseq_async::{Config, LeaseQueue, Push, SimRuntime};
    ///
    /// let rt = SimRuntime::new();
    /// rt.block_on({
    ///     let rt = rt.clone();
    ///     async move {
    ///         let q = LeaseQueue::with_runtime(rt, Config::new(Duration::from_secs(30))).unwrap();
    ///         for step in ["paid", "packed", "shipped"] {
    ///             q.try_push_with(step, Push::new().group("order-17")).unwrap();
    ///         }
    ///         let paid = q.receive().await.unwrap();
    ///         assert!(q.try_receive().is_none(), "packed waits for paid");
    ///         paid.ack().await.unwrap();
    ///         assert_eq!(*q.receive().await.unwrap().item(), "packed");
    ///     }
    /// });
    /// ```
    pub fn group(mut self, name: impl AsRef<[u8]>) -> Self {
        self.set_flow(|k| k.group(FlowKey::named(name)));
        self
    }

    /// Flow keys given as ids ([`FlowKeys`], [`FlowKey::new`]): replaces any
    /// [`kind`](Self::kind), [`partition`](Self::partition) and [`group`](Self::group)
    /// given before (empty keys: none).
    pub fn flow_keys(mut self, keys: FlowKeys) -> Self {
        self.flow = (!keys.is_empty()).then(|| Box::new(keys));
        self.flags = if keys.is_empty() {
            self.flags & !FLOWED
        } else {
            self.flags | FLOWED
        };
        self
    }

    /// The flow keys changed by `f` (from none: empty keys).
    fn set_flow(&mut self, f: impl FnOnce(FlowKeys) -> FlowKeys) {
        let keys = f(self.flow.as_deref().copied().unwrap_or_default());
        self.flow = Some(Box::new(keys));
        self.flags |= FLOWED;
    }

    /// Whether flow keys were given.
    #[inline]
    pub(crate) fn flowed(&self) -> bool {
        self.flags & FLOWED != 0
    }

    /// The flow keys given, if any: what a store keeps beside the item.
    pub fn flow(&self) -> Option<FlowKeys> {
        self.flow.as_deref().copied()
    }

    /// With a [`key`](Self::key): a ready or delayed item holding the key is replaced by
    /// this one (an item in flight never is; the push is then refused as without it).
    pub const fn replace_pending(mut self) -> Self {
        self.options = self.options.replace_pending();
        self
    }

    /// The delay, the time to live and the core's options (priority level, key, replace):
    /// for stores that record a push (a durable store journals them).
    pub fn parts(&self) -> (Duration, Option<Duration>, &PushOptions) {
        (self.delay, self.ttl, &self.options)
    }

    /// Whether this is a plain push (no delay, time to live, level or key): the kind an
    /// unbounded in-memory queue takes without its state lock.
    #[inline]
    pub(crate) fn is_plain(&self) -> bool {
        self.flags & (DELAYED | TTL | LEVEL | KEYED | FLOWED) == 0
    }

    /// Whether this is a keyed push with nothing else but perhaps a priority level (no
    /// delay, time to live, key window or flow keys): the memory store's keyed push that
    /// needs neither the core's window nor its flow push, nor (unless the queue has key
    /// windows, see [`keyed`](Self::keyed)) a clock reading.
    #[inline]
    pub(crate) fn is_bare_keyed(&self) -> bool {
        self.flags & !LEVEL == KEYED
    }

    /// Whether the push is measured from the clock's time: a delay, a time to live or a
    /// key window of its own (a plain push becomes visible at the queue's latest time,
    /// whatever it).
    #[inline]
    pub(crate) fn needs_clock(&self) -> bool {
        self.flags & (DELAYED | TTL | WINDOWED) != 0
    }

    /// Whether a key was given. A keyed push without a window of its own still meets the
    /// windows of the key's holder, judged at the push's time: on the queue's latest time
    /// instead, a holder whose window had passed since (a `Period` over, an item gone past
    /// its `LiveThen`) would still hold the key until some other call moved the queue's
    /// time on. So it reads the clock when the queue has windows
    /// ([`key_windows_in_use`](leaseq_core::Queue::key_windows_in_use)), and only then.
    #[inline]
    pub(crate) fn keyed(&self) -> bool {
        self.flags & KEYED != 0
    }

    /// Whether the push goes to the core's plain push (no flow keys, no key window):
    /// [`push_into`](Self::push_into) is then the core's `push_with_id_take`, called
    /// directly where the push is made.
    #[inline]
    pub(crate) fn unflowed(&self) -> bool {
        self.flags & (FLOWED | WINDOWED) == 0
    }

    /// Pushes `item` into `core` under `id` at `now` with `options` (this push's, at
    /// `now`), its key held for this push's window: the one way the memory store's pushes
    /// reach the core.
    #[inline]
    pub(crate) fn push_into<T>(
        &self,
        core: &mut leaseq_core::Queue<T>,
        id: leaseq_core::MessageId,
        item: T,
        now: Timestamp,
        options: PushOptions,
    ) -> Result<leaseq_core::Pushed<T>, leaseq_core::PushError<T>> {
        if let Some(keys) = self.flow.as_deref() {
            // (A key window with flow keys is refused before: `flow_conflict`.)
            core.push_flow_with_id_take(id, item, now, options, *keys)
        } else if self.windowed() {
            core.push_windowed_with_id_take(id, item, now, options, self.window)
        } else {
            core.push_with_id_take(id, item, now, options)
        }
    }

    /// What no store offers with flow keys, if this push asks for it: a
    /// [`key_window`](Self::key_window) beside them. Every store refuses such a push with
    /// [`PushError::Unsupported`](crate::PushError::Unsupported) naming this, the item
    /// handed back.
    pub fn flow_conflict(&self) -> Option<&'static str> {
        (self.flags & (FLOWED | WINDOWED) == FLOWED | WINDOWED).then_some(WINDOW_WITH_FLOW)
    }

    /// This push, made by a caller that waits for room when the queue is full and pushes
    /// again: a full queue's refusal is not counted as rejected (see
    /// [`PushOptions::waits_for_room`]). Not part of [`is_plain`](Self::is_plain): an
    /// unbounded in-memory queue still takes it through its inbox.
    pub(crate) fn waiting_for_room(mut self) -> Self {
        self.options = self.options.waits_for_room();
        self
    }

    /// The core's options for a push at `now`.
    pub(crate) fn options_at(&self, now: Timestamp) -> PushOptions {
        let mut options = self.options.delay(self.delay);
        if let Some(ttl) = self.ttl {
            options = options.expires_at(now.saturating_add(ttl));
        }
        options
    }
}
