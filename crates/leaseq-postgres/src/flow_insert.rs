//! The writer's insert for a batch with flow keys (issue 32): `sql.rs`'s insert with three
//! more arrays, grouped rows held at `flow_sql::HOLD` until their group's turn, the groups'
//! rows and the queue's flag in the same statement.

use crate::flow_sql::HOLD;

/// The writer's insert (`sql.rs`'s `insert` or `insert_checked`) for a batch with flow
/// keys: `$11`, `$12`, `$13` the rows' kind, partition and group keys (`NULL`: none). A
/// grouped row waits at [`HOLD`] with its own due time in `fdue` and its place in its
/// group, `fseq`: one number of `flow_seq` per batch, shifted, plus the row's place in the
/// batch (the writer's order, the push order); its group's row is made or its `last`
/// raised, and the queue's flag set (`grouped`, for good), in the same statement.
/// `s` is the quoted schema the statement names.
pub(crate) fn flowed_insert(insert: &str, s: &str) -> String {
    let out = insert
        .replace(s, "{s}")
        .replacen(
            "WITH mark AS (",
            "WITH b AS (SELECT nextval('{s}.flow_seq') AS base),\n                 mark AS (",
            1,
        )
        .replacen(
            "INSERT INTO {s}.items (id, queue, priority, visible_at, expires_at, payload)",
            "INSERT INTO {s}.items (id, queue, priority, visible_at, expires_at, payload,
                                          fkind, fpart, fgroup, fseq, fdue)",
            1,
        )
        .replacen(
            "SELECT u.id, $1, u.priority, statement_timestamp() + u.delay * interval '1 microsecond',",
            "SELECT u.id, $1, u.priority, CASE WHEN u.grp IS NULL
                          THEN statement_timestamp() + u.delay * interval '1 microsecond'
                          ELSE {hold} END,",
            1,
        )
        .replacen(
            "u.ttl * interval '1 microsecond', u.payload",
            "u.ttl * interval '1 microsecond', u.payload,
                          u.kind, u.part, u.grp,
                          CASE WHEN u.grp IS NOT NULL THEN (SELECT base FROM b) * 16777216 + u.ord END,
                          CASE WHEN u.grp IS NOT NULL
                          THEN statement_timestamp() + u.delay * interval '1 microsecond' END",
            1,
        )
        .replacen(
            "$6::bytea[])",
            "$6::bytea[],
                               $11::bigint[], $12::bigint[], $13::bigint[]) WITH ORDINALITY",
            1,
        )
        .replacen(
            "AS u(id, priority, delay, ttl, payload)",
            "AS u(id, priority, delay, ttl, payload, kind, part, grp, ord)",
            1,
        )
        .replacen(
            ")\n                 SELECT pg_notify($7, $1) WHERE $8::bool",
            "
                   RETURNING fgroup, fseq),
                 grp AS (
                   INSERT INTO {s}.flow_groups AS g (queue, grp, turn, last)
                   SELECT $1, ins.fgroup, clock_timestamp(), max(ins.fseq) FROM ins
                   WHERE ins.fgroup IS NOT NULL GROUP BY ins.fgroup
                   ON CONFLICT (queue, grp) DO UPDATE SET last = GREATEST(g.last, EXCLUDED.last)),
                 flag AS (
                   INSERT INTO {s}.flow_queues AS f (queue, grouped)
                   SELECT $1, true WHERE EXISTS (SELECT 1 FROM ins WHERE ins.fgroup IS NOT NULL)
                   ON CONFLICT (queue) DO UPDATE SET grouped = true)
                 SELECT pg_notify($7, $1) WHERE $8::bool",
            1,
        );
    out.replace("{hold}", HOLD).replace("{s}", s)
}
