//! Jitter determinism: two queues with the same seed give identical results.

use super::*;

// ===================================================================================
// Jitter determinism
// ===================================================================================

/// Runs `ops` against a queue with `cfg` and writes every observable result to a log.
fn jitter_log(cfg: Config, ops: &[(u64, u8, Index)]) -> (String, Vec<(u64, Nacked)>) {
    let mut q: Queue<u32> = Queue::new(cfg).unwrap();
    let mut log = String::new();
    let mut receipts: Vec<Receipt> = Vec::new();
    let mut retries = Vec::new();
    let mut now = 0u64;
    for (i, (dt, kind, idx)) in ops.iter().enumerate() {
        now += dt;
        let t = ts(now);
        match kind % 5 {
            0 => writeln!(log, "push {:?}", q.push(i as u32, t).map(|id| id.get())).unwrap(),
            1 => {
                let l = q.receive(t);
                writeln!(
                    log,
                    "receive {:?}",
                    l.as_ref().map(|l| (l.id, l.attempt, l.deadline))
                )
                .unwrap();
                receipts.extend(l.map(|l| l.receipt));
            }
            2 if !receipts.is_empty() => {
                let r = receipts[idx.index(receipts.len())];
                let res = q.nack(r, t, Failure::error("x"));
                if let Ok(n) = res {
                    retries.push((now, n));
                }
                writeln!(log, "nack {res:?}").unwrap();
            }
            3 if !receipts.is_empty() => {
                let r = receipts[idx.index(receipts.len())];
                writeln!(log, "ack {:?}", q.ack(r, t)).unwrap();
            }
            _ => {
                q.handle_timeout(t);
                writeln!(log, "timeout {:?}", q.poll_timeout()).unwrap();
            }
        }
        writeln!(log, "{:?}", q.stats()).unwrap();
        while let Some(e) = q.poll_event() {
            writeln!(log, "{e:?}").unwrap();
        }
        q.check_invariants().unwrap();
    }
    (log, retries)
}

proptest! {
    #![proptest_config(seed_config(500, 0x7177e5))]

    /// Two queues with the same jitter seed and the same calls give identical results;
    /// jittered retries stay within `[d × (1 - p), d]` of the backoff delay.
    #[test]
    fn jitter_is_deterministic(
        seed in any::<u64>(),
        percent in 0u8..=100,
        fixed in any::<bool>(),
        ops in prop::collection::vec(
            (prop::sample::select(vec![0u64, 0, 1000, 5000, 20_000]), any::<u8>(), any::<Index>()),
            1..80,
        ),
    ) {
        let d = Duration::from_nanos(10_000);
        let backoff = if fixed {
            Backoff::Fixed(d)
        } else {
            Backoff::exponential(d, Duration::from_nanos(80_000))
        };
        let cfg = Config::new(Duration::from_nanos(50_000))
            .with_max_attempts(6)
            .with_backoff(backoff)
            .with_jitter(Jitter::new(percent, seed))
            .with_events(EventMask::ALL);
        let (a, retries) = jitter_log(cfg.clone(), &ops);
        let (b, _) = jitter_log(cfg, &ops);
        prop_assert_eq!(&a, &b);
        for (at, n) in retries {
            if let Nacked::Retrying { visible_at, attempts } = n {
                let full = nanos(backoff.delay(attempts));
                let min = full - full * percent as u64 / 100;
                let got = visible_at.as_nanos() - at;
                prop_assert!(got >= min && got <= full, "delay {} not in [{}, {}]", got, min, full);
            }
        }
    }
}
