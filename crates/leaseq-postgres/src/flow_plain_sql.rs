//! Schema step 21 (issues 32 and 33): the flow claims say, as the plain claim does, whether
//! each row they lease has a graph node. A leaf: `schema.rs` takes [`MIGRATION`],
//! [`claims`] and [`fill`] from here; `flow_claim.rs` reads the column ([`PLAIN_AT`]).
//!
//! **Why.** The plain claim returns `node IS NULL` with each row, and the settler acks
//! such rows with the bare statement (`ack_plain.rs`), which pays nothing for the graph.
//! The flow claims (`flow_claim`, `flow_claim_slots`, `flow_claim_groups`) did not say, so
//! every ack of a flowed queue's row took the told statement (its rows' nodes returned and
//! aggregated). Step 21 makes the three again with a thirteenth column, `r_plain`, last
//! (NULL on the closing row that says what held items back): a changed result type needs
//! `DROP FUNCTION` and `CREATE`, and `flow_claim` hands over to the other two with
//! `RETURN QUERY SELECT *`, so the three change together. The flag is a hint, as the plain
//! claim's is: the bare ack deletes only rows still without a node.
//!
//! **The texts.** The functions' texts (`flow_sql.rs`, `flow_slots_sql.rs`,
//! `flow_groups_sql.rs`) hold placeholders where the column goes: the steps that made them
//! before (12, 15, 18) fill them with nothing ([`Columns::Held`], their text as shipped),
//! step 21 with the column ([`Columns::Plain`]).

/// Where a flow claim's row says it has no graph node (`r_plain`, step 21's last column).
pub(crate) const PLAIN_AT: usize = 12;

/// The columns a flow claim function returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Columns {
    /// Steps 12 to 19: the item's, then how soon to look again and what held items back.
    Held,
    /// Step 21: those and, last, whether the row has no graph node (`r_plain`).
    Plain,
}

/// Fills a flow claim function's placeholders for `cols`: `{plain_col}` (the column in
/// `RETURNS TABLE`), `{no_plain}` (its NULL on a row that is no item), `{plain_ret}` (in an
/// `UPDATE .. RETURNING` of the leased rows, read back as `u.plain`: `{plain_of_u}`) and
/// `{plain_of_it}` (in a `RETURNING` that is the function's result).
pub(crate) fn fill(text: &str, cols: Columns) -> String {
    let plain = cols == Columns::Plain;
    let pick = |s: &'static str| if plain { s } else { "" };
    text.replace("{plain_col}", pick(", r_plain boolean"))
        .replace("{no_plain}", pick(", NULL::boolean"))
        .replace("{plain_ret}", pick(", it.node IS NULL AS plain"))
        .replace("{plain_of_u}", pick(", u.plain"))
        .replace("{plain_of_it}", pick(", it.node IS NULL"))
}

/// A flow claim function's step-21 text (`text` with [`Columns::Plain`] filled in) with its
/// one statement `from` made `to`: how the later steps that make a claim again change one
/// statement and keep the rest and the result type (steps 23 and 24,
/// `flow_slots_pk_sql.rs`, `flow_walk_pk_sql.rs`). Empty if the text no longer holds `from`
/// exactly once (their unit tests fail then).
pub(crate) fn with_statement(text: &str, from: &str, to: &str) -> String {
    let text = fill(text, Columns::Plain);
    if text.matches(from).count() != 1 {
        return String::new();
    }
    text.replacen(from, to, 1)
}

/// Schema step 21: the three flow claims dropped and made again with `r_plain`
/// (`{flow_claims_plain}`, filled in by `schema.rs` with [`claims`]). `{s}` the quoted
/// schema. Idempotent.
pub(crate) const MIGRATION: &str = r#"
    DROP FUNCTION IF EXISTS {s}.flow_claim(text, integer, bigint, boolean, bigint, boolean, integer);
    DROP FUNCTION IF EXISTS {s}.flow_claim_slots(text, integer, bigint, bigint, boolean);
    DROP FUNCTION IF EXISTS {s}.flow_claim_groups(text, integer, bigint, boolean, bigint, boolean, integer);
    {flow_claims_plain}
"#;

/// What `schema.rs` runs before it runs a step older than 21 again over a schema that had
/// step 21 (its version set back by hand, as the tests of older steps do): the three flow
/// claims dropped if they already return `r_plain`, since the older steps' `CREATE OR
/// REPLACE` cannot change a function's result type (step 21 makes them again). Nothing on
/// a schema that never had step 21. `{s}` the quoted schema.
pub(crate) const BEFORE_OLDER_STEPS: &str = r#"
    DO $do$ BEGIN
        IF EXISTS (SELECT 1 FROM pg_proc p
                   WHERE p.pronamespace = '{s}'::regnamespace AND p.proname = 'flow_claim'
                     AND 'r_plain' = ANY(p.proargnames)) THEN
            DROP FUNCTION IF EXISTS {s}.flow_claim(text, integer, bigint, boolean, bigint, boolean, integer);
            DROP FUNCTION IF EXISTS {s}.flow_claim_slots(text, integer, bigint, bigint, boolean);
            DROP FUNCTION IF EXISTS {s}.flow_claim_groups(text, integer, bigint, boolean, bigint, boolean, integer);
        END IF;
    END $do$;
"#;

/// Step 21's three `CREATE FUNCTION`s, `{s}`, `{schema}` and `{groups_enter}` still to
/// fill in.
pub(crate) fn claims() -> String {
    [
        crate::flow_slots_sql::claim_fn(),
        crate::flow_groups_sql::claim_fn(),
        crate::flow_sql::claim_fn(),
    ]
    .iter()
    .map(|f| fill(f, Columns::Plain))
    .collect()
}
