//! A calendar from a sorted table of tick instants (what a cron crate would answer), and
//! the catch-up policies and tick tables the schedule property tests draw from.

use std::num::NonZeroU32;

use leaseq_core::schedule::{Calendar, CatchUp};
use leaseq_core::Timestamp;

use crate::time::ts;

/// A calendar from a sorted table of tick instants, in nanoseconds after the epoch.
#[derive(Clone, Debug)]
pub struct Table(pub Vec<u64>);

impl Calendar for Table {
    fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        let i = self.0.partition_point(|&x| x <= t.as_nanos());
        self.0.get(i).map(|&x| ts(x))
    }
    fn last_at_or_before(&self, t: Timestamp) -> Option<Timestamp> {
        let i = self.0.partition_point(|&x| x <= t.as_nanos());
        i.checked_sub(1).map(|i| ts(self.0[i]))
    }
}

/// `CatchUp::All` with `limit` (not zero).
pub fn all(limit: u32) -> CatchUp {
    CatchUp::All {
        limit: NonZeroU32::new(limit).expect("a limit above zero"),
    }
}

/// Any catch-up policy: skip with a grace under 50 ns, once, all with a small limit, all.
#[cfg(feature = "proptest")]
pub fn catch_up() -> impl proptest::strategy::Strategy<Value = CatchUp> {
    use proptest::prelude::*;
    prop_oneof![
        (0u64..50).prop_map(|g| CatchUp::Skip {
            grace: std::time::Duration::from_nanos(g)
        }),
        Just(CatchUp::Once),
        (1u32..8).prop_map(all),
        Just(all(u32::MAX)),
    ]
}

/// Sorted, distinct tick instants with irregular gaps (a calendar's months and DST days).
#[cfg(feature = "proptest")]
pub fn table() -> impl proptest::strategy::Strategy<Value = Vec<u64>> {
    use proptest::prelude::*;
    prop::collection::vec(1u64..40, 0..60).prop_map(|gaps| {
        let mut t = 0;
        gaps.into_iter()
            .map(|g| {
                t += g;
                t
            })
            .collect()
    })
}

/// A [`table`] and a [`catch_up`] policy, drawn in that order: a calendar's ticks and what
/// a driver does about the ones it missed.
#[cfg(feature = "proptest")]
pub fn calendar() -> impl proptest::strategy::Strategy<Value = (Vec<u64>, CatchUp)> {
    (table(), catch_up())
}
