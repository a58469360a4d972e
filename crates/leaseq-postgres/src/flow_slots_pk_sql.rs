//! Schema step 23 (issue 32): the slot claim (`flow_claim_slots`, `flow_slots_sql.rs`)
//! leases the rows it picked by their primary key, whatever the statistics say. A leaf:
//! `schema.rs` takes [`MIGRATION`] and [`claim`] from here.
//!
//! **Why.** The claim picks its rows (locked, in the claim index's order), then leases
//! them with `UPDATE .. WHERE it.id = ANY(picked) AND it.queue = q AND it.state = 0`. The
//! store's sessions plan once, generically (`open.rs`), and when the items table's
//! statistics do not know the queue (its rows pushed after the last `ANALYZE`, as every
//! new queue's are), the planner took the queue's equality for one row and leased
//! through the claim index (`queue = q`, every waiting row of the queue read to find the
//! picked ids) rather than through the primary key. A claim of ten rows from a backlog
//! of 30,000 then read some 8,000 buffers and took 20 to 40 ms, until the first upkeep's
//! `ANALYZE` made the plans again: the limit's "bad mode" (BENCHMARKS.md, round 12).
//! The queue's equality adds nothing there (the rows were picked from the queue and are
//! locked by this claim), so step 23 leaves it out: the primary key is the only index that
//! serves the statement. Nothing else changes (step 21's columns, same result).
//!
//! **Nor its state.** Without the queue the planner still read the claim index whole
//! (`id = ANY(..)` as an index condition on its last column: the index is partial,
//! `WHERE state = 0`, and the statistics called it small), so the state's equality goes
//! too ([`BY_ID`] says why the rows need neither).

/// The slot claim's lease of its picked rows as steps 15 and 21 shipped it.
const BY_QUEUE: &str = "WHERE it.id = ANY(picked) AND it.queue = q AND it.state = 0\n";

/// The same by primary key alone: no condition a partial index's predicate follows from
/// (the claim index is `WHERE state = 0`), so that no plan reads another index. The rows
/// need none: the pick locked them `FOR UPDATE` (which judges its conditions, `state = 0`
/// among them, again on a row's latest version) and this claim holds them to its commit,
/// so no other statement changes them in between.
const BY_ID: &str = "WHERE it.id = ANY(picked)\n";

/// Schema step 23: `flow_claim_slots` made again ([`claim`], `{flow_claim_slots_by_id}`
/// filled in by `schema.rs`). `{s}` the quoted schema. Idempotent.
pub(crate) const MIGRATION: &str = r#"
    {flow_claim_slots_by_id}
"#;

/// Step 23's `CREATE OR REPLACE` of `flow_claim_slots`: step 21's text (its columns
/// included) with the picked rows leased by id; empty if that text no longer has the
/// statement (a unit test fails then).
pub(crate) fn claim() -> String {
    crate::flow_plain_sql::with_statement(&crate::flow_slots_sql::claim_fn(), BY_QUEUE, BY_ID)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_23_leases_the_picked_rows_by_id_alone() {
        let sql = claim();
        assert!(sql.contains("CREATE OR REPLACE FUNCTION {s}.flow_claim_slots("));
        assert!(sql.contains(BY_ID));
        assert!(!sql.contains(BY_QUEUE));
        // No condition on the state either: the claim index's predicate must not follow.
        let at = sql.find(BY_ID).unwrap() + BY_ID.len();
        assert!(sql[at..].trim_start().starts_with("RETURNING"));
        // Step 21's columns, so that `CREATE OR REPLACE` keeps the result type.
        assert!(sql.contains("r_plain boolean"));
    }
}
