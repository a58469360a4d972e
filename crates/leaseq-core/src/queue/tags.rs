//! The flow keys of an item as flow control keeps them (`Tags`), and the keys its limits
//! count by (`Scoped`): shared by concurrency limits (`limits`), ordered groups (`groups`)
//! and rate limits (`rates`), so that none of them imports another for them.

use crate::flow::FlowKey;

/// A limit's key: `LimitScope` without `Queue` (counted by the in-flight gauge): `KIND`,
/// `PARTITION`, or `GROUP` (an ordered group, one at a time: counted, never limited).
pub(super) type Scoped = (u8, FlowKey);
pub(super) const KIND: u8 = 0;
pub(super) const PARTITION: u8 = 1;
pub(super) const GROUP: u8 = 2;

/// The flow keys of one item, and its slot while it is live (for its group's turn).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Tags {
    pub(super) kind: Option<FlowKey>,
    pub(super) partition: Option<FlowKey>,
    pub(super) group: Option<FlowKey>,
    /// The item's slot while it is live.
    pub(super) slot: u32,
}

impl Tags {
    /// The keys the item is counted by: its kind, partition and group, those it has.
    pub(super) fn scoped(self) -> impl Iterator<Item = Scoped> {
        let kind = self.kind.map(|k| (KIND, k));
        let group = self.group.map(|g| (GROUP, g));
        kind.into_iter()
            .chain(self.partition.map(|p| (PARTITION, p)))
            .chain(group)
    }
}
