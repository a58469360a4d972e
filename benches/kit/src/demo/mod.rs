//! What the demo examples (`redelivery`, `item_timeouts`, `live_stats`) share: their command
//! line (`args.rs`), their seeded choice of hung items ([`pick_hung`], here), and what shows
//! a long run's progress: one status line (`status.rs`) redrawn by a thread of its own
//! (`progress.rs`).

mod args;
mod progress;
mod status;

pub use args::{args_or_exit, parse_args, DemoArgs, Spec, DEFAULT_SEED};
pub use progress::Progress;
pub use status::StatusLine;

use crate::rng::mix64;

/// Exactly `count` of `items` items marked hung, chosen by a partial Fisher-Yates shuffle
/// driven by `seed`.
pub fn pick_hung(seed: u64, items: u32, count: usize) -> Vec<bool> {
    let count = count.min(items as usize);
    let mut order: Vec<u32> = (0..items).collect();
    let mut state = seed;
    for i in 0..count {
        state = mix64(state);
        let j = i + (state % (items as u64 - i as u64)) as usize;
        order.swap(i, j);
    }
    let mut hung = vec![false; items as usize];
    for &i in &order[..count] {
        hung[i as usize] = true;
    }
    hung
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn picks_exactly_count_hung_items() {
        let hung = pick_hung(42, 500, 10);
        assert_eq!(hung.iter().filter(|&&h| h).count(), 10);
        assert_eq!(hung, pick_hung(42, 500, 10));
        assert_ne!(hung, pick_hung(43, 500, 10));
        assert_eq!(pick_hung(1, 3, 9).iter().filter(|&&h| h).count(), 3);
    }
}
