//! Concurrency limits: at most N items in flight per queue, per job kind and per partition
//! key given at push.
//!
//! A queue without limits and without tagged pushes never comes here. The first tagged
//! push or limit makes a `Flow` and sets bit 0 of `ready_mask` (`SLOW`, shared with the paused flag), which the
//! level-0 fast path of a receive tests anyway: from then on every receive takes
//! `take_allowed`, which walks the ready lists from the highest level, in delivery order,
//! past the items a full limit holds back, and leases the first one it may. So an item held
//! back stays ready in its place, and those behind it that no full limit holds go; the cost
//! is a step per item held back ahead of the one leased.
//!
//! A tagged item (`TAGGED` in its slot's meta) has its kind, partition and ordered group
//! (see `groups`) in `Flow::tags` by id, for life: kept while it is a dead letter, so that a redrive keeps them. While it
//! is in flight it is counted in `Flow::running` (`COUNTED`), and taken off when it leaves
//! flight: `leave_flight` for every settle, `untag` for an ack's fast path (which frees the
//! slot with `COUNTED` still set).

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

use super::rates::Rates;
use super::tags::{Scoped, Tags, GROUP, KIND, PARTITION};
use super::{Queue, State, COUNTED, SLOW, TAGGED};
use crate::flow::{FlowKey, FlowKeys, LimitScope};

/// The flow control state of a queue that uses it.
#[derive(Debug, Default)]
pub(super) struct Flow {
    /// The queue-wide limit.
    pub(super) queue_max: Option<u32>,
    /// The limits by kind and partition.
    pub(super) limits: BTreeMap<Scoped, u32>,
    /// Tagged items in flight, by kind, partition and group (whether limited or not, so
    /// that a limit set later counts right at once). No zero entries.
    running: BTreeMap<Scoped, u32>,
    /// The kind, partition, group and slot of each tagged item (live or dead letter), by
    /// id.
    pub(super) tags: BTreeMap<u64, Tags>,
    /// The live items of each ordered group, by id: the first is the group's head, the
    /// only one that may be leased (see `groups`). No empty sets.
    pub(super) groups: BTreeMap<FlowKey, BTreeSet<u64>>,
    /// The rate limits (see `rates`).
    pub(super) rates: Rates,
}

impl Flow {
    /// Whether an item with `tags` may be leased now (the queue-wide limit checked apart).
    fn allows(&self, id: u64, tags: Option<&Tags>) -> bool {
        tags.is_none_or(|t| self.limits_allow(t) && self.group_allows(id, t))
    }

    /// Whether no full kind or partition limit holds back an item with `t`.
    pub(super) fn limits_allow(&self, t: &Tags) -> bool {
        t.scoped().all(|k| {
            self.limits
                .get(&k)
                .is_none_or(|&max| self.running.get(&k).copied().unwrap_or(0) < max)
        })
    }

    /// Whether its group's turn lets the item `id` with `t` go (no group: yes).
    pub(super) fn group_allows(&self, id: u64, t: &Tags) -> bool {
        t.group
            .is_none_or(|g| self.is_head(g, id) && !self.running.contains_key(&(GROUP, g)))
    }
}

impl<T> Queue<T> {
    /// Sets (`Some`) or removes (`None`) the concurrency limit of `scope`: at most `max`
    /// items of it in flight. Takes effect at once: the next receive leases past the items
    /// a full limit holds back, which stay ready in their place. A limit lowered below what
    /// is in flight takes no lease back; no item of it is leased until fewer are in flight.
    /// A limit of 0 leases none (a pause).
    ///
    /// ```
    /// use core::time::Duration;
    /// use leaseq_core::{Config, FlowKey, FlowKeys, LimitScope, PushOptions, Queue, Timestamp};
    ///
    /// let mut q = Queue::new(Config::new(Duration::from_secs(30))).unwrap();
    /// let t = Timestamp::ZERO;
    /// let acme = FlowKeys::new().partition(FlowKey::named("acme"));
    /// let bolt = FlowKeys::new().partition(FlowKey::named("bolt"));
    /// q.set_limit(LimitScope::Partition(FlowKey::named("acme")), Some(1));
    /// q.push_flow("a1", t, PushOptions::new(), acme).unwrap();
    /// q.push_flow("a2", t, PushOptions::new(), acme).unwrap();
    /// q.push_flow("b1", t, PushOptions::new(), bolt).unwrap();
    /// let a1 = q.receive(t).unwrap();
    /// assert_eq!(q.receive(t).unwrap().item, "b1"); // a2 waits on acme's limit
    /// assert!(q.receive(t).is_none());
    /// assert_eq!(q.waiting_on_limits(), 1);
    /// q.ack(a1.receipt, t).unwrap();
    /// assert_eq!(q.receive(t).unwrap().item, "a2");
    /// ```
    pub fn set_limit(&mut self, scope: LimitScope, max: Option<u32>) {
        let flow = self.flow_mut();
        match (scope, max) {
            (LimitScope::Queue, max) => flow.queue_max = max,
            (LimitScope::Kind(k), Some(max)) => _ = flow.limits.insert((KIND, k), max),
            (LimitScope::Partition(p), Some(max)) => _ = flow.limits.insert((PARTITION, p), max),
            (LimitScope::Kind(k), None) => _ = flow.limits.remove(&(KIND, k)),
            (LimitScope::Partition(p), None) => _ = flow.limits.remove(&(PARTITION, p)),
        }
    }

    /// The concurrency limit of `scope`, if one is set.
    pub fn limit(&self, scope: LimitScope) -> Option<u32> {
        let flow = self.flow.as_deref()?;
        match scope {
            LimitScope::Queue => flow.queue_max,
            LimitScope::Kind(k) => flow.limits.get(&(KIND, k)).copied(),
            LimitScope::Partition(p) => flow.limits.get(&(PARTITION, p)).copied(),
        }
    }

    /// Items of `scope` in flight now.
    pub fn in_flight_of(&self, scope: LimitScope) -> u64 {
        let running = |k| {
            self.flow
                .as_deref()
                .map_or(0, |f| f.running.get(&k).copied().unwrap_or(0).into())
        };
        match scope {
            LimitScope::Queue => self.stats.in_flight,
            LimitScope::Kind(k) => running((KIND, k)),
            LimitScope::Partition(p) => running((PARTITION, p)),
        }
    }

    /// The flow state, made on first use (and the receive path switched to `take_allowed`).
    #[cold]
    pub(super) fn flow_mut(&mut self) -> &mut Flow {
        self.ready_mask |= SLOW;
        self.flow.get_or_insert_with(Default::default)
    }

    /// Records the flow keys of the item just put into `slot` (not empty).
    pub(super) fn tag(&mut self, slot: usize, keys: FlowKeys) {
        let id = self.slots[slot].id;
        let tags = Tags {
            kind: keys.kind_key(),
            partition: keys.partition_key(),
            group: keys.group_key(),
            slot: slot as u32,
        };
        let flow = self.flow_mut();
        flow.tags.insert(id, tags);
        if let Some(g) = tags.group {
            flow.groups.entry(g).or_default().insert(id);
        }
        self.slots[slot].meta |= TAGGED;
    }

    /// Marks the item just put into `slot` tagged if its id has tags (a redrive).
    /// Its group takes it back, at its place in push order.
    pub(super) fn retag(&mut self, slot: usize) {
        let s = &mut self.slots[slot];
        let Some(flow) = self.flow.as_deref_mut() else {
            return;
        };
        let Some(tags) = flow.tags.get_mut(&s.id) else {
            return;
        };
        s.meta |= TAGGED;
        tags.slot = slot as u32;
        if let Some(g) = tags.group {
            flow.groups.entry(g).or_default().insert(s.id);
        }
    }

    /// Drops the tags of dead letters taken out for good: a group a dead letter blocks
    /// goes on (see `groups`).
    pub(super) fn forget_tags(&mut self, ids: impl Iterator<Item = u64>) {
        let Some(flow) = self.flow.as_deref_mut() else {
            return;
        };
        let mut blocked = Vec::new();
        for id in ids {
            if let Some(g) = flow.tags.remove(&id).and_then(|t| t.group) {
                blocked.push((g, id));
            }
        }
        for (g, id) in blocked {
            self.leave_group(g, id);
        }
    }

    /// Takes an item leaving flight off its keys' counts, if it was counted.
    #[inline(always)]
    pub(super) fn uncount(&mut self, slot: usize) {
        if self.slots[slot].meta & COUNTED != 0 {
            self.uncount_cold(slot);
        }
    }

    #[cold]
    #[inline(never)]
    fn uncount_cold(&mut self, slot: usize) {
        let s = &mut self.slots[slot];
        s.meta &= !COUNTED;
        let id = s.id;
        let Some(flow) = self.flow.as_deref_mut() else {
            return;
        };
        let Some(&tags) = flow.tags.get(&id) else {
            return;
        };
        for k in tags.scoped() {
            if let Some(n) = flow.running.get_mut(&k) {
                *n -= 1;
                if *n == 0 {
                    flow.running.remove(&k);
                }
            }
        }
    }

    /// The tagged item leaving `slot` (freed, its meta as it was): off the counts, and its
    /// tags dropped unless it became a `dead` letter.
    /// An item leaving its group lets the next one go, a dead letter too unless the queue's
    /// [`GroupDeadLetter`](crate::GroupDeadLetter) is `Block` (see `groups`).
    pub(super) fn untag(&mut self, slot: usize, dead: bool) {
        self.uncount(slot);
        let id = self.slots[slot].id;
        let Some(flow) = self.flow.as_deref_mut() else {
            return;
        };
        let group = flow.tags.get(&id).and_then(|t| t.group);
        if !dead {
            flow.tags.remove(&id);
        }
        if let Some(g) = group.filter(|_| !(dead && self.dead_blocks_group())) {
            self.leave_group(g, id);
        }
    }

    /// A receive of a queue with flow control: takes the first ready item, highest level
    /// first and in delivery order within a level, that no full limit and no rate holds
    /// back, off its ready list (still `Ready`), counted in its keys and rates; `None` if
    /// there is none. Notes when the first item a rate held back becomes eligible (see
    /// `rates`).
    #[inline(never)]
    pub(super) fn take_allowed(&mut self) -> Option<usize> {
        let flow = self.flow.as_deref()?;
        if flow
            .queue_max
            .is_some_and(|m| self.stats.in_flight >= u64::from(m))
        {
            return None;
        }
        let now = self.now.as_nanos();
        let floor = flow.rates.queue_hold(now);
        let (slot, wake) = self.first_allowed(flow, now, floor);
        if !flow.rates.is_empty() {
            // A walk that found nothing saw every held item: its instant is exact.
            self.note_rate_wake(wake, slot.is_none());
        }
        let slot = slot?;
        self.leave_waiting(slot);
        let s = &mut self.slots[slot];
        let tagged = s.meta & TAGGED != 0;
        let id = s.id;
        if tagged {
            s.meta |= COUNTED;
        }
        let flow = self.flow.as_deref_mut()?;
        let tags = flow.tags.get(&id).copied().filter(|_| tagged);
        if let Some(tags) = tags {
            for k in tags.scoped() {
                *flow.running.entry(k).or_default() += 1;
            }
        }
        flow.rates.take(tags.as_ref(), now);
        Some(slot)
    }

    /// The first ready item no limit or rate holds back at `now` (the queue-wide
    /// concurrency limit not checked; the queue-wide rate holds every item until `floor`,
    /// if it does), and the earliest instant one of the items a rate held back before it
    /// becomes eligible. The walk stops at an item eligible at `floor`: none can be
    /// earlier.
    fn first_allowed(
        &self,
        flow: &Flow,
        now: u64,
        floor: Option<u64>,
    ) -> (Option<usize>, Option<u64>) {
        let mut wake: Option<u64> = None;
        let floor = floor.unwrap_or(0);
        for slot in self.ready_in_order() {
            if !self.allowed(flow, slot) {
                continue;
            }
            let s = &self.slots[slot];
            let own = (s.meta & TAGGED != 0)
                .then(|| flow.rates.hold(flow.tags.get(&s.id), now))
                .flatten();
            let at = own.map_or(floor, |o| o.max(floor));
            if at <= now {
                return (Some(slot), wake);
            }
            wake = Some(wake.map_or(at, |w| w.min(at)));
            if at == floor {
                break;
            }
        }
        (None, wake)
    }

    /// Whether the item in `slot` is held back by no kind or partition limit.
    fn allowed(&self, flow: &Flow, slot: usize) -> bool {
        let s = &self.slots[slot];
        s.meta & TAGGED == 0 || flow.allows(s.id, flow.tags.get(&s.id))
    }

    /// Every ready item in delivery order: levels from the highest, each list in order.
    pub(super) fn ready_in_order(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.ready.len())
            .rev()
            .flat_map(move |level| self.ready[level].iter(&self.slots))
    }

    /// Ready items that a full concurrency limit holds back now (all of them while the
    /// queue-wide limit is reached): part of [`Stats::ready`](crate::Stats::ready). A pass
    /// over the ready items with limits; 0 at once without.
    pub fn waiting_on_limits(&self) -> u64 {
        let Some(flow) = self.flow.as_deref() else {
            return 0;
        };
        if flow
            .queue_max
            .is_some_and(|m| self.stats.in_flight >= u64::from(m))
        {
            return self.stats.ready;
        }
        self.ready_in_order()
            .filter(|&slot| !self.allowed(flow, slot))
            .count() as u64
    }

    /// Whether the flow state is consistent: the mask bit set exactly with it, every
    /// counted item tagged and in flight, every tagged item in flight counted, the counts
    /// those of the counted items.
    pub(super) fn flow_check(&self) -> bool {
        if (self.ready_mask & SLOW != 0) != (self.flow.is_some() || self.stats.paused) {
            return false;
        }
        let mut recount: BTreeMap<Scoped, u32> = BTreeMap::new();
        let mut members: BTreeMap<FlowKey, BTreeSet<u64>> = BTreeMap::new();
        for (i, s) in self.slots.iter().enumerate() {
            let tags = self.flow.as_deref().and_then(|f| f.tags.get(&s.id));
            if s.meta & TAGGED != 0 && s.state != State::Free {
                let Some(t) = tags.filter(|t| t.slot as usize == i) else {
                    return false;
                };
                if let Some(g) = t.group {
                    members.entry(g).or_default().insert(s.id);
                }
            }
            let counted = s.meta & COUNTED != 0;
            let tagged = s.meta & TAGGED != 0 && s.state != State::Free;
            if counted && !(tagged && s.state == State::InFlight) {
                return false;
            }
            if tagged && s.state == State::InFlight && !counted {
                return false;
            }
            if counted {
                let Some(tags) = self.flow.as_deref().and_then(|f| f.tags.get(&s.id)) else {
                    return false;
                };
                tags.scoped()
                    .for_each(|k| *recount.entry(k).or_default() += 1);
            }
        }
        // With `GroupDeadLetter::Block`, the dead letters (the tagged ids not live) keep
        // their place in their groups.
        if let Some(flow) = self.flow.as_deref().filter(|_| self.dead_blocks_group()) {
            let live: BTreeSet<u64> = members.values().flatten().copied().collect();
            for (&id, t) in &flow.tags {
                if let Some(g) = t.group.filter(|_| !live.contains(&id)) {
                    members.entry(g).or_default().insert(id);
                }
            }
        }
        let groups = self.flow.as_deref().map(|f| &f.groups);
        groups.is_none_or(|g| *g == members)
            && self
                .flow
                .as_deref()
                .map_or(Vec::new(), |f| f.running.iter().collect())
                == recount.iter().collect::<Vec<_>>()
    }
}
