//! Says, outside the test harness's capture, whether the Postgres tests of this run talk to
//! a server or were skipped (`harness = false`: what it prints is always shown). With
//! `LEASEQ_PG_REQUIRED=1` (as `.ci/run` sets) an unreachable server fails the run.

use leaseq_test_kit::pg as common;

fn main() {
    match common::server() {
        Some(url) => eprintln!("leaseq-postgres: the Postgres tests run against {url:?}"),
        None => {
            // `server()` printed the loud note; repeat it where nothing captures it.
            eprintln!(
                "\n##########################################################################\n\
                 ## leaseq-postgres: the Postgres tests were SKIPPED: no server answered. ##\n\
                 ## Set {}=<connection string> to run them (default: {:?}).\n\
                 ##########################################################################\n",
                common::URL_VAR,
                common::DEFAULT_URL
            );
        }
    }
}
