//! Property-test configs that are deterministic by default.

use proptest::test_runner::{Config, RngAlgorithm, RngSeed};

/// `cases` cases from the fixed `seed`, no failure files, XorShift (ChaCha is slow in debug
/// builds; XorShift is plenty for test generation). `PROPTEST_RNG_SEED=<n>` in the
/// environment explores other streams.
pub fn seed_config(cases: u32, seed: u64) -> Config {
    let mut c = Config {
        cases,
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::XorShift,
        ..Config::default()
    };
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        c.rng_seed = RngSeed::Fixed(seed);
    }
    c
}
