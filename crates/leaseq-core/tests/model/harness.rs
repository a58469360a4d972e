//! The runner's harness: the real queue and the model side by side, receipts, leases
//! compared, pushes.

use super::*;

impl Harness {
    pub(super) fn new(cfg: &MConfig) -> Self {
        Harness {
            q: Queue::new(cfg.to_crate()).expect("valid config"),
            other: Queue::new(cfg.to_crate()).expect("valid config"),
            m: Model::new(cfg.clone()),
            clock: 0,
            receipts: Vec::new(),
            next_item: 1000,
        }
    }

    pub(super) fn receipt(&self, i: &Index) -> Option<RRec> {
        (!self.receipts.is_empty()).then(|| self.receipts[i.index(self.receipts.len())])
    }

    pub(super) fn check_lease(&mut self, got: leaseq_core::Lease<Item>, want: MLease) {
        assert_eq!(
            (
                got.item,
                got.id.get(),
                got.attempt,
                got.deadline.as_nanos(),
                got.expires_at.map(Timestamp::as_nanos),
            ),
            (
                want.item,
                want.id,
                want.attempt,
                want.deadline,
                want.expires_at
            ),
            "lease"
        );
        cov(if want.attempt > 1 {
            "receive: redelivery"
        } else {
            "receive: first"
        });
        if want.deadline < add(self.m.now, self.m.cfg.visibility) {
            cov("receive: deadline cut by max_lease or expiry");
        }
        assert_eq!(got.receipt.id(), got.id);
        assert_eq!(got.receipt.lease_number(), want.lease);
        self.receipts.push(RRec {
            receipt: got.receipt,
            foreign: false,
            id: want.id,
            lease: want.lease,
            slot: want.slot,
        });
    }

    /// A push; `opts` (level, key, replace) only for `Op::PushOpts`, which goes through
    /// `push_take` so that a replaced item can be checked.
    pub(super) fn push(
        &mut self,
        t: u64,
        delay: Duration,
        expiry: Option<Option<i64>>,
        opts: Option<(u8, Option<u8>, bool)>,
    ) {
        let item = self.next_item;
        self.next_item += 1;
        let expires_at = expiry.map(|e| match e {
            Some(off) => t.saturating_add_signed(off),
            None => NEVER,
        });
        let (level, key, replace) = opts.unwrap_or((0, None, false));
        // Every third push with options comes from a caller that waits for room.
        let waits = opts.is_some() && item % 3 == 0;
        let mkey = key_of(key);
        let got = match (opts, expiry) {
            (None, None) if delay.is_zero() => self.q.push(item, ts(t)).map(|id| (id, None)),
            (None, None) => self.q.push_delayed(item, ts(t), delay).map(|id| (id, None)),
            _ => {
                let mut o = PushOptions::new().delay(delay).priority(level);
                if let Some(e) = expires_at {
                    o = o.expires_at(ts(e));
                }
                match &mkey {
                    MKey::None => {}
                    MKey::Key(k) => o = o.key(k),
                    MKey::TooLong(n) => o = o.key(vec![b'x'; *n]),
                }
                if replace {
                    o = o.replace_pending();
                }
                if waits {
                    o = o.waits_for_room();
                }
                if opts.is_some() {
                    self.q.push_take(item, ts(t), o).map(|p| (p.id, p.replaced))
                } else {
                    self.q.push_with(item, ts(t), o).map(|id| (id, None))
                }
            }
        };
        let want = self
            .m
            .push(item, t, delay, expires_at, level, &mkey, replace, waits);
        match (got, want) {
            (Ok((id, replaced)), Ok((mid, mreplaced))) => {
                cov("push: Ok");
                note_id(id);
                assert_eq!(id.get(), mid, "push id");
                let mreplaced = mreplaced.map(|o| (MessageId_of(o), self.m.items[o as usize].item));
                assert_eq!(replaced, mreplaced, "replaced");
                if replaced.is_some() {
                    cov("push: replaced a pending item");
                }
            }
            (Err(PushError::Full(back)), Err(MPushError::Full)) => {
                cov("push: Full");
                assert_eq!(back, item);
            }
            (Err(PushError::AlreadyExpired(back)), Err(MPushError::Expired)) => {
                cov("push: AlreadyExpired");
                assert_eq!(back, item);
            }
            (
                Err(PushError::PriorityOutOfRange { item: back, level }),
                Err(MPushError::Level(l)),
            ) => {
                cov("push: PriorityOutOfRange");
                assert_eq!((back, level), (item, l));
            }
            (Err(PushError::KeyTooLong { item: back, len }), Err(MPushError::KeyTooLong(l))) => {
                cov("push: KeyTooLong");
                assert_eq!((back, len), (item, l));
            }
            (
                Err(PushError::DuplicateKey {
                    item: back,
                    existing,
                }),
                Err(MPushError::Duplicate(holder)),
            ) => {
                cov(if replace {
                    "push: DuplicateKey (holder in flight)"
                } else {
                    "push: DuplicateKey"
                });
                assert_eq!((back, existing.get()), (item, holder));
            }
            (got, want) => panic!("push: queue {got:?}, model {want:?}"),
        }
    }
}
