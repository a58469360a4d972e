//! Seeded random numbers for the randomized and fault-injecting tests (SplitMix64): the
//! same seed, the same run, so that a failing seed replays.

/// A SplitMix64 stream from its seed (the tuple's value, its state).
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`; the modulo bias is negligible for a test's small `n`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True one time in `n` (always for `n` of 0 or 1).
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n.max(1)) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn matches_the_reference_splitmix64() {
        // The first output of SplitMix64 seeded with 0 (Vigna's reference implementation).
        assert_eq!(Rng(0).next_u64(), 0xE220_A839_7B1D_CDAF);
    }
}
