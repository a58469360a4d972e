//! The check at the end of a fault run: the log of what callers were told against the rows
//! as a direct connection (no proxy) finds them.

use std::collections::HashMap;

use super::log::{Entry, Op, Told};

/// What a run came to.
#[derive(Debug, Default)]
pub(crate) struct Report {
    pub(crate) pushed_ok: usize,
    pub(crate) pushed_unconfirmed: usize,
    pub(crate) deliveries: usize,
    /// Deliveries after one that did not end in a nack answered Ok (its lease was lost).
    pub(crate) duplicates: usize,
    /// Settles refused as stale, and settles whose outcome is unknown / not done.
    pub(crate) stale: usize,
    pub(crate) unknown: usize,
    pub(crate) not_done: usize,
    /// Acks answered Ok.
    pub(crate) acked: usize,
    /// Everything found wrong, in words.
    pub(crate) violations: Vec<String>,
}

/// One item's story.
#[derive(Default)]
struct Item {
    pushed: Option<bool>,
    /// Attempts delivered, in the order told.
    attempts: Vec<u32>,
    /// Settles by attempt: (op, told), in the order told.
    settles: Vec<(u32, Op, Told)>,
}

/// Checks the log against the rows `(id, state)` of the queue.
pub(crate) fn check(log: &[Entry], rows: &HashMap<u64, i16>) -> Report {
    let mut r = Report::default();
    let mut items: HashMap<u64, Item> = HashMap::new();
    for e in log {
        match *e {
            Entry::Pushed { id, ok } => {
                items.entry(id).or_default().pushed = Some(ok);
                if ok {
                    r.pushed_ok += 1;
                } else {
                    r.pushed_unconfirmed += 1;
                }
            }
            Entry::Refused => {}
            Entry::Delivered { id, attempt } => {
                r.deliveries += 1;
                items.entry(id).or_default().attempts.push(attempt);
            }
            Entry::Settled {
                id,
                attempt,
                op,
                told,
            } => {
                match told {
                    Told::Stale => r.stale += 1,
                    Told::Unknown => r.unknown += 1,
                    Told::NotDone => r.not_done += 1,
                    Told::Ok { .. } if op == Op::Ack => r.acked += 1,
                    Told::Ok { .. } => {}
                }
                items
                    .entry(id)
                    .or_default()
                    .settles
                    .push((attempt, op, told));
            }
        }
    }
    for (id, item) in &items {
        let v = &mut r.violations;
        if item.pushed.is_none() {
            v.push(format!("{id}: delivered but never pushed"));
            continue;
        }
        // No delivery twice at one attempt (a row inserted twice starts again at 1), and
        // the attempts go up as they are told (a few may be told out of order by
        // concurrent receivers, never twice the same).
        let mut sorted = item.attempts.clone();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            v.push(format!(
                "{id}: delivered twice at one attempt: {:?}",
                item.attempts
            ));
        }
        // Each delivery but the last: what ended it lets the next one come.
        let ended = |a: u32| -> Option<(Op, Told)> {
            // A final answer of the attempt (an extension does not end a lease).
            item.settles
                .iter()
                .filter(|(at, op, _)| *at == a && *op != Op::Extend)
                .map(|(_, op, t)| (*op, *t))
                .next_back()
        };
        for w in sorted.windows(2) {
            match ended(w[0]) {
                Some((Op::Ack | Op::DeadLetter, Told::Ok { .. })) => v.push(format!(
                    "{id}: delivered again (attempt {}) after attempt {} was settled Ok",
                    w[1], w[0]
                )),
                Some((Op::Nack, Told::Ok { dead: true })) => v.push(format!(
                    "{id}: delivered again (attempt {}) after a dead letter at attempt {}",
                    w[1], w[0]
                )),
                Some((Op::Nack, Told::Ok { dead: false })) => {}
                _ => r.duplicates += 1,
            }
        }
        let row = rows.get(id).copied();
        let last = sorted.last().and_then(|a| ended(*a));
        let any_unknown_ack = item
            .settles
            .iter()
            .any(|(_, op, t)| *op == Op::Ack && *t == Told::Unknown);
        match (last, row) {
            (Some((Op::Ack, Told::Ok { .. })), Some(state)) => v.push(format!(
                "{id}: acked Ok, yet its row is there (state {state})"
            )),
            (Some((Op::DeadLetter, Told::Ok { .. })), s) if s != Some(2) => {
                v.push(format!("{id}: dead-lettered Ok, yet its row is {s:?}"))
            }
            (Some((Op::Nack, Told::Ok { dead: true })), s) if s != Some(2) => v.push(format!(
                "{id}: nacked to the dead letters, yet its row is {s:?}"
            )),
            (Some((Op::Ack, Told::Ok { .. })), None) => {}
            (_, None) if !any_unknown_ack && item.pushed == Some(true) => v.push(format!(
                "{id}: pushed Ok, its row is gone, and no ack told so"
            )),
            _ => {}
        }
    }
    for id in rows.keys() {
        if !items.contains_key(id) {
            r.violations
                .push(format!("{id}: a row no push answered for"));
        }
    }
    r
}
