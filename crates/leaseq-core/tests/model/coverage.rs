//! The ids collected from real pushes, the outcome coverage counters, dead letters as the
//! model sees them.

use super::*;

/// `MessageId`s cannot be made from outside the crate; the test collects real ones from
/// pushes (both queues number from 0) and looks them up here.
#[allow(non_snake_case)]
pub(super) fn MessageId_of(id: u64) -> MessageId {
    IDS.with(|ids| {
        ids.borrow()
            .get(id as usize)
            .copied()
            .unwrap_or_else(|| panic!("test bug: no MessageId {id} collected yet"))
    })
}

thread_local! {
    pub(super) static IDS: std::cell::RefCell<Vec<MessageId>> = const { std::cell::RefCell::new(Vec::new()) };
}

pub(super) fn note_id(id: MessageId) {
    IDS.with(|ids| {
        let mut ids = ids.borrow_mut();
        let n = id.get() as usize;
        if n == ids.len() {
            ids.push(id);
        }
        assert_eq!(ids[n], id);
    });
}

pub(super) fn known_ids() -> usize {
    IDS.with(|ids| ids.borrow().len())
}

thread_local! {
    /// How often each kind of outcome came up, so that a strategy that stops reaching an
    /// outcome fails the test instead of silently testing less.
    pub(super) static COV: std::cell::RefCell<BTreeMap<String, u64>> = const { std::cell::RefCell::new(BTreeMap::new()) };
}

pub(super) fn cov(key: &str) {
    COV.with(|c| *c.borrow_mut().entry(key.to_string()).or_default() += 1);
}

/// Records `op: <outer variant>(<inner variant>` of a result, e.g. `ack: Err(Redelivered`.
pub(super) fn cov_result<T: std::fmt::Debug>(op: &str, r: &T) {
    let d = format!("{r:?}");
    let mut key = format!("{op}: ");
    let mut parens = 0;
    for c in d.chars() {
        if c == '(' && parens == 0 {
            parens += 1;
        } else if !c.is_alphabetic() {
            break;
        }
        key.push(c);
    }
    cov(&key);
}

pub(super) fn dead_view<T: Copy + Into<Item>>(d: &DeadLetter<T>) -> (u64, MDead) {
    (
        d.id.get(),
        MDead {
            item: d.item.into(),
            attempts: d.attempts,
            reason: d.reason,
            last_error: d.last_error.clone(),
            at: d.at.as_nanos(),
            expires_at: d.expires_at.map(Timestamp::as_nanos),
            priority: d.priority,
            key: d.key.map(|k| k.as_bytes().to_vec()),
        },
    )
}
