//! The limit and rate scopes of the core's model tests, drawn as small numbers.

use leaseq_core::{FlowKey, LimitScope};

/// The scope a generated pair names: `0` the queue, `1` kind `k`, else partition `k`.
pub fn scope(s: u8, k: u64) -> LimitScope {
    match s {
        0 => LimitScope::Queue,
        1 => LimitScope::Kind(FlowKey::new(k)),
        _ => LimitScope::Partition(FlowKey::new(k)),
    }
}

/// The scopes an item pushed with these keys (kind, partition) counts in.
pub fn scopes(tags: (Option<u64>, Option<u64>)) -> Vec<LimitScope> {
    let mut v = vec![LimitScope::Queue];
    v.extend(tags.0.map(|k| scope(1, k)));
    v.extend(tags.1.map(|k| scope(2, k)));
    v
}
