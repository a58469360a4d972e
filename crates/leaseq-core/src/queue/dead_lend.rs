//! Lending dead letters: moved out to a driver that copies them where its lock is not held,
//! then returned.
//!
//! An item's `Clone` is user code. A driver that keeps the queue behind a lock and hands out
//! copies of dead letters would run it under that lock, where a `Clone` that calls back into
//! the queue deadlocks. Lent, the letters are the caller's (moved, so the copies need no
//! `Sync`), to copy after its lock is released; then returned to where they were. While a
//! letter is lent it stays a dead letter for the gauges, the invariants and a cancel
//! (refused as `DeadLettered`), but the reads, the takes and the redrives do not see it:
//! the driver keeps those out until the letters are back.

use super::Queue;
use crate::dead_letter::DeadLetter;
use crate::id::MessageId;

impl<T> Queue<T> {
    /// Moves dead letter `id` out to the caller, to be given back with
    /// [`return_dead_letter`](Self::return_dead_letter); `None` if there is no such dead
    /// letter (or it is lent already). Nothing is counted: the letter stays in
    /// [`Stats::dead`](crate::Stats::dead).
    pub fn lend_dead_letter(&mut self, id: MessageId) -> Option<DeadLetter<T>> {
        let letter = self.dead.remove(&id)?;
        self.lent.insert(id);
        Some(letter)
    }

    /// Puts back a dead letter [lent](Self::lend_dead_letter), as it was. A letter that was
    /// not lent (or is back already) is refused and handed back.
    // Handed back by value, as a refused push hands back its item: boxing it would cost
    // every return an allocation for a refusal a driver never meets.
    #[allow(clippy::result_large_err)]
    pub fn return_dead_letter(&mut self, letter: DeadLetter<T>) -> Result<(), DeadLetter<T>> {
        if !self.lent.remove(&letter.id) {
            return Err(letter);
        }
        self.dead.insert(letter.id, letter);
        Ok(())
    }

    /// Whether `id` is a dead letter, lent or not.
    pub fn is_dead_letter(&self, id: MessageId) -> bool {
        self.dead.contains_key(&id) || self.lent.contains(&id)
    }

    /// Dead letters lent and not returned yet.
    pub fn lent_dead_letters(&self) -> usize {
        self.lent.len()
    }
}

#[cfg(test)]
mod tests {
    use core::time::Duration;

    use crate::{CancelError, Config, Queue, Timestamp};

    #[test]
    fn a_lent_letter_stays_counted_and_comes_back_as_it_was() {
        let mut q = Queue::new(Config::new(Duration::from_secs(1))).unwrap();
        let id = q.push(7u32, Timestamp::ZERO).unwrap();
        let lease = q.receive(Timestamp::ZERO).unwrap();
        q.dead_letter(lease.receipt, Timestamp::ZERO, None).unwrap();
        let before = q.get_dead_letter(id).cloned().unwrap();

        let letter = q.lend_dead_letter(id).unwrap();
        assert!(q.lend_dead_letter(id).is_none(), "lent once");
        assert_eq!(q.stats().dead, 1);
        assert!(q.is_dead_letter(id));
        assert_eq!(q.lent_dead_letters(), 1);
        assert!(q.check_invariants().is_ok());
        assert_eq!(
            q.cancel(id, Timestamp::ZERO),
            Err(CancelError::DeadLettered(id))
        );
        assert_eq!(q.dead_letters().count(), 0, "reads do not see it");

        q.return_dead_letter(letter).unwrap();
        assert_eq!(q.get_dead_letter(id), Some(&before));
        assert_eq!(q.lent_dead_letters(), 0);
        assert!(q.check_invariants().is_ok());
        assert_eq!(
            q.return_dead_letter(before.clone()),
            Err(before),
            "a letter not lent is refused"
        );
    }
}
