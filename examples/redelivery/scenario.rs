//! The scenario: which calls are slow and which items hang (pure functions of the seed),
//! what happened to each item, one handler call.

use super::*;

impl Scenario {
    pub(super) fn new(seed: u64) -> Self {
        let items = 500u32;
        // Exactly 2% of the items, chosen by the seed.
        let hung = pick_hung(seed, items, items as usize * 2 / 100);
        Scenario {
            seed,
            items,
            workers: 10,
            hung,
            slow_percent: 10,
            slow: Duration::from_millis(600),
            fast: Duration::from_millis(10),
            item_timeout: Duration::from_secs(2),
            visibility: Duration::from_millis(500),
            max_attempts: 3,
            cut: Duration::from_secs(10),
        }
    }

    /// Whether call number `call` (0, 1, ...) of `item` is slow. A pure function of the seed,
    /// the item and the call number, so it does not depend on how tasks were scheduled.
    pub(super) fn is_slow(&self, item: u32, call: u32) -> bool {
        let key = ((item as u64) << 32) | call as u64;
        let draw = mix64(self.seed ^ mix64(key ^ 0x5EED_5EED_5EED_5EED));
        draw % 1000 < self.slow_percent * 10
    }

    pub(super) fn hung_items(&self) -> Vec<u32> {
        (0..self.items).filter(|&i| self.hung[i as usize]).collect()
    }
}

impl Tracker {
    pub(super) fn new(n: u32) -> Self {
        let zeros = || (0..n).map(|_| AtomicU32::new(0)).collect();
        Tracker {
            calls: zeros(),
            finished: zeros(),
            dropped: zeros(),
            refused_late: AtomicU32::new(0),
        }
    }

    pub(super) fn count(v: &[AtomicU32], pred: impl Fn(u32) -> bool) -> u64 {
        v.iter().filter(|a| pred(a.load(Ordering::Acquire))).count() as u64
    }
}

/// One handler call. Hung items never finish (the caller's timeout ends them); the others
/// sleep 0.6 s or 10 ms and record that they finished.
pub(super) async fn work<R: Runtime>(rt: &R, sc: &Scenario, tracker: &Tracker, item: u32) {
    let i = item as usize;
    let call = tracker.calls[i].fetch_add(1, Ordering::AcqRel);
    if sc.hung[i] {
        std::future::pending::<()>().await;
    }
    let took = if sc.is_slow(item, call) {
        sc.slow
    } else {
        sc.fast
    };
    rt.sleep_until(rt.now().saturating_add(took)).await;
    tracker.finished[i].fetch_add(1, Ordering::AcqRel);
    CALLS_FINISHED.fetch_add(1, Ordering::Relaxed);
}
