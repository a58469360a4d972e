//! `leaseq ... workflows | workflow ID | batches | batch ID | cancel-workflow | retry-step`
//! on a store whose operator does not offer workflows (a SQLite file today): said so, exit
//! 1, nothing done; a cancel without `--yes` a usage error before anything is opened. (The
//! tables themselves, over an operator that offers them, are the unit tests of
//! `src/workflows.rs`.)

mod common;

use common::{fixture, snapshot, sqlite};
use leaseq_test_kit::output::fails;
use leaseq_test_kit::sqlite::remove;

#[test]
fn a_sqlite_file_says_it_does_not_offer_workflows_and_batches() {
    let path = fixture("cli-workflows");
    let before = snapshot(&path);
    for args in [
        &["workflows"][..],
        &["workflow", "0"],
        &["batches", "--json"],
        &["batch", "3"],
        &["cancel-workflow", "0", "--yes"],
        &["retry-step", "0", "upload"],
    ] {
        let out = sqlite(&path, args);
        fails(&out, 1, "does not offer workflows and batches");
        assert!(out.stdout.is_empty(), "{args:?} printed nothing");
    }
    fails(
        &sqlite(&path, &["cancel-workflow", "0"]),
        2,
        "cancel-workflow cancels every step left: add --yes",
    );
    assert_eq!(snapshot(&path), before, "the file untouched");
    remove(&path);
}
