//! Schema step 24 (issue 32): the walking flow claim (`flow_claim`, `flow_sql.rs`: kind and
//! partition limits, rates) leases the rows it picked by their primary key, whatever the
//! statistics say. A leaf: `schema.rs` takes [`MIGRATION`] and [`claim`] from here.
//!
//! **Why.** The walk leases its picks with `UPDATE .. WHERE it.id = ANY(picked) AND
//! it.queue = q AND it.state = 0`, the statement the slot claim and the grouped claim had
//! (steps 22 and 23, `flow_slots_pk_sql.rs`, `flow_groups_plans.rs`): `state = 0` is the
//! claim index's predicate, so a generic plan made from statistics that do not know the
//! queue may lease through that partial index and read every waiting row of the queue in
//! each claim. Unlike the slot claim's, the walk's picks are not locked (its cursors read;
//! the queue's advisory lock keeps other flow claims out, not the upkeep dead-lettering an
//! expired row), so the state is still tested, as `state < 1`: the same rows (states are
//! 0 and up), and no partial index's predicate follows from it. The queue's equality goes
//! (the ids were picked from the queue): the primary key is the one index left.

/// The walk's lease of its picked rows as steps 12, 15, 18 and 21 shipped it.
const BY_QUEUE: &str = "WHERE it.id = ANY(picked) AND it.queue = q AND it.state = 0\n";

/// The same by primary key, the state tested in a form that no partial index's predicate
/// (`items_claim`'s is `state = 0`) follows from.
const BY_ID: &str = "WHERE it.id = ANY(picked) AND it.state < 1\n";

/// Schema step 24: `flow_claim` made again ([`claim`], `{flow_claim_walk_by_id}` filled in
/// by `schema.rs`). `{s}` the quoted schema. Idempotent.
pub(crate) const MIGRATION: &str = r#"
    {flow_claim_walk_by_id}
"#;

/// Step 24's `CREATE OR REPLACE` of `flow_claim`: step 21's text (its columns included)
/// with the picked rows leased by id; empty if that text no longer has the statement (a
/// unit test fails then).
pub(crate) fn claim() -> String {
    crate::flow_plain_sql::with_statement(&crate::flow_sql::claim_fn(), BY_QUEUE, BY_ID)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_24_leases_the_walks_picks_by_id_and_a_state_no_index_follows_from() {
        let sql = claim();
        assert!(sql.contains("CREATE OR REPLACE FUNCTION {s}.flow_claim("));
        assert!(sql.contains(BY_ID));
        assert!(!sql.contains(BY_QUEUE));
        let at = sql.find(BY_ID).unwrap() + BY_ID.len();
        assert!(sql[at..].trim_start().starts_with("RETURNING"));
        // Step 21's columns, so that `CREATE OR REPLACE` keeps the result type.
        assert!(sql.contains("r_plain boolean"));
    }
}
