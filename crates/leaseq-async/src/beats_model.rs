//! Model test of heartbeat scheduling ([`Heartbeats`]) against the core, driven the way the
//! queue's driver drives it: time moves only as far as the next alarm (a punctual driver),
//! and at each stop the core's deadlines are applied first, then the due beats.
//!
//! Safety: a lease whose heartbeat is registered and not lost is always still held (no lease
//! runs out under a live heartbeat, even one shortened by hand). Liveness: a heartbeat is
//! given up (marked lost and unregistered) only when its lease is no longer held. And the
//! registrations are exactly the model's.

use std::sync::Arc;
use std::time::Duration;

use leaseq_core::{Config, ItemState, MessageId, Queue, Receipt, Timestamp};
use proptest::prelude::*;

use crate::beats::{BeatKey, Heartbeats};
use crate::lease_lost::LeaseSignal;

const VISIBILITY: Duration = Duration::from_nanos(100);
const EVERY: Duration = Duration::from_nanos(30);

#[derive(Clone, Debug)]
enum Op {
    Push,
    Receive { heartbeat: bool },
    Ack(usize),
    Unregister(usize),
    Extend(usize, u64),
    Wait(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::Push),
        3 => any::<bool>().prop_map(|heartbeat| Op::Receive { heartbeat }),
        1 => (0usize..6).prop_map(Op::Ack),
        1 => (0usize..6).prop_map(Op::Unregister),
        2 => ((0usize..6), (1u64..400)).prop_map(|(i, d)| Op::Extend(i, d)),
        4 => (0u64..200).prop_map(Op::Wait),
    ]
}

struct Held {
    id: MessageId,
    receipt: Receipt,
    beat: Option<(BeatKey, Arc<LeaseSignal>)>,
}

struct Harness {
    core: Queue<u8>,
    beats: Heartbeats,
    held: Vec<Held>,
    now: Timestamp,
}

impl Harness {
    /// What the driver does when it wakes: deadlines first, then the due beats.
    fn drive(&mut self) {
        self.core.handle_timeout(self.now);
        self.beats
            .run_due(&mut self.core, self.now, EVERY, VISIBILITY);
    }

    /// When the driver would wake next.
    fn alarm(&mut self) -> Timestamp {
        let core = self.core.poll_timeout().unwrap_or(Timestamp::MAX);
        core.min(self.beats.next_due())
    }

    fn check(&self) -> Result<(), TestCaseError> {
        let in_flight: Vec<MessageId> = self
            .core
            .items()
            .filter(|v| matches!(v.state, ItemState::InFlight { .. }))
            .map(|v| v.id)
            .collect();
        let mut live = 0;
        for h in &self.held {
            if let Some((_, signal)) = &h.beat {
                if signal.is_lost() {
                    // Lost only if the lease is gone: not in flight, or in flight again
                    // under another holder.
                    let again = self
                        .held
                        .iter()
                        .any(|o| o.id == h.id && !std::ptr::eq(o, h));
                    prop_assert!(
                        !in_flight.contains(&h.id) || again,
                        "{:?} marked lost while still held",
                        h.id
                    );
                } else {
                    live += 1;
                    prop_assert!(
                        in_flight.contains(&h.id),
                        "{:?} ran out at {:?} under a live heartbeat",
                        h.id,
                        self.now
                    );
                }
            }
        }
        prop_assert_eq!(self.beats.len(), live);
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn heartbeats_keep_every_live_lease(ops in prop::collection::vec(op(), 1..80), capped in any::<bool>()) {
        let mut config = Config::new(VISIBILITY).with_max_attempts(100);
        if capped {
            config = config.with_max_lease(Duration::from_nanos(350));
        }
        let mut h = Harness {
            core: Queue::new(config).unwrap(),
            beats: Heartbeats::default(),
            held: Vec::new(),
            now: Timestamp::from_nanos(0),
        };
        for op in ops {
            match op {
                Op::Push => {
                    let _ = h.core.push(0, h.now);
                }
                Op::Receive { heartbeat } => {
                    if let Some(lease) = h.core.receive(h.now) {
                        let beat = heartbeat.then(|| {
                            let signal = Arc::new(LeaseSignal::default());
                            let first = h.now.saturating_add(EVERY).min(lease.deadline);
                            (h.beats.register(lease.receipt, signal.clone(), first), signal)
                        });
                        h.held.push(Held { id: lease.id, receipt: lease.receipt, beat });
                    }
                }
                Op::Ack(i) if i < h.held.len() => {
                    let held = h.held.swap_remove(i);
                    if let Some((key, _)) = held.beat {
                        h.beats.unregister(key);
                    }
                    let _ = h.core.ack(held.receipt, h.now);
                }
                Op::Unregister(i) if i < h.held.len() => {
                    if let Some((key, _)) = h.held[i].beat.take() {
                        h.beats.unregister(key);
                    }
                }
                Op::Extend(i, d) if i < h.held.len() => {
                    // By hand, as `Delivery::extend` does: the beat comes forward if needed.
                    let held = &h.held[i];
                    if let Ok(leaseq_core::Extended::Until { deadline, .. }) =
                        h.core.extend(held.receipt, h.now, Duration::from_nanos(d))
                    {
                        if let Some((key, _)) = &held.beat {
                            let at = h.now.saturating_add(EVERY).min(deadline);
                            h.beats.bring_forward(*key, at);
                        }
                    }
                }
                Op::Wait(d) => {
                    // A punctual driver: time stops at every alarm on the way.
                    let target = h.now.saturating_add(Duration::from_nanos(d));
                    loop {
                        let alarm = h.alarm();
                        if alarm > target {
                            h.now = target;
                            h.drive();
                            break;
                        }
                        h.now = h.now.max(alarm);
                        h.drive();
                    }
                }
                _ => {}
            }
            h.check()?;
        }
    }
}
