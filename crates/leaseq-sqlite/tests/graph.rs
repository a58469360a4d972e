//! Jobs that wait for other jobs on the SQLite store (issue 33): the graph kept in the
//! file (format 8) and restored at open: a chain across reopens, results and batch counts
//! durable, a release lost in a crash redone at the next open, a format-6 file migrated,
//! a refused push handing the job back. (Real time: the writer is a thread.)

mod support;

use std::path::Path;

use leaseq_async::dependencies::{
    BatchOn, DependencyError, DependencyStore, NodeId, OnFailedParent, Parent, StepState,
    WorkflowSpec,
};
use leaseq_async::MessageId;
use leaseq_sqlite::{Options, FORMAT_VERSION};

fn item(q: &support::Queue) -> Option<Vec<u8>> {
    q.try_receive().map(|d| {
        let item = d.item().clone();
        smol::block_on(d.ack()).unwrap();
        item
    })
}

/// Pushes "parent", then "child" after it: their message and node.
fn parent_and_child(q: &support::Queue) -> (MessageId, NodeId) {
    let parent = q.try_push(b"parent".to_vec()).unwrap();
    let after = [Parent::Message(parent)];
    let child = q
        .store()
        .push_after(b"child".to_vec(), &after, OnFailedParent::Cancel);
    (parent, smol::block_on(child).unwrap())
}

/// Reopens `path` (after a clean close of `q`).
fn reopen(q: support::Queue, path: &Path) -> support::Queue {
    leaseq_test_kit::sqlite::shut(q);
    support::open_default(path).unwrap()
}

#[test]
fn a_chain_runs_in_order_across_reopens_with_its_results() {
    let path = support::temp("graph-chain");
    let q = support::open_default(&path).unwrap();
    let wf = smol::block_on(async {
        let spec = WorkflowSpec::new()
            .step("a", b"a".to_vec(), &[])
            .step("b", b"b".to_vec(), &["a"])
            .step("c", b"c".to_vec(), &["b"]);
        q.store().push_workflow(spec).await.unwrap()
    });
    let q = reopen(q, &path);
    let d = q.try_receive().expect("step a, restored");
    assert_eq!(d.item(), b"a");
    assert!(q.try_receive().is_none(), "b waits");
    smol::block_on(async {
        q.store().record_result(d.id(), b"out-a").await.unwrap();
        d.ack().await.unwrap();
    });
    let q = reopen(q, &path);
    let d = q.try_receive().expect("step b, released in a's commit");
    assert_eq!(d.item(), b"b");
    let parents = smol::block_on(q.store().parent_outcomes(d.id()))
        .unwrap()
        .unwrap();
    assert_eq!(
        parents[0].result.as_deref(),
        Some(&b"out-a"[..]),
        "the result kept"
    );
    smol::block_on(d.ack()).unwrap();
    let q = reopen(q, &path);
    assert_eq!(item(&q).as_deref(), Some(&b"c"[..]));
    assert!(q.try_receive().is_none(), "each step once");
    let steps = smol::block_on(q.store().workflow_steps(wf))
        .unwrap()
        .unwrap();
    assert!(
        steps.iter().all(|s| matches!(s.state, StepState::Acked(_))),
        "{steps:?}"
    );
    let q = reopen(q, &path);
    smol::block_on(q.store().forget_workflow(wf)).unwrap();
    let q = reopen(q, &path);
    assert_eq!(smol::block_on(q.store().workflow_steps(wf)).unwrap(), None);
    leaseq_test_kit::sqlite::shut(q);
    support::remove(&path);
}

#[test]
fn batch_counts_are_exact_across_reopens() {
    let path = support::temp("graph-batch");
    let q = support::open_default(&path).unwrap();
    let children: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i]).collect();
    let batch = smol::block_on(
        q.store()
            .push_batch(children, b"cb".to_vec(), BatchOn::Complete),
    )
    .unwrap();
    for _ in 0..4 {
        item(&q).unwrap();
    }
    let d = q.try_receive().unwrap();
    smol::block_on(d.dead_letter("bad")).unwrap();
    let q = reopen(q, &path);
    let counts = smol::block_on(q.store().batch_counts(batch))
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            counts.total,
            counts.acked,
            counts.dead_lettered,
            counts.open
        ),
        (10, 4, 1, 5)
    );
    let mut seen = Vec::new();
    while let Some(got) = item(&q) {
        seen.push(got);
    }
    assert_eq!(seen.len(), 6, "five children, then the callback once");
    assert_eq!(seen.last().map(Vec::as_slice), Some(&b"cb"[..]));
    let q = reopen(q, &path);
    let counts = smol::block_on(q.store().batch_counts(batch))
        .unwrap()
        .unwrap();
    assert_eq!((counts.acked, counts.dead_lettered, counts.open), (9, 1, 0));
    assert!(q.try_receive().is_none());
    leaseq_test_kit::sqlite::shut(q);
    support::remove(&path);
}

/// A crash that kept a parent's ack but not its dependent's release (the graph's rows as a
/// store that lost the release would leave them): the next open releases it, once.
#[test]
fn a_release_lost_in_a_crash_is_redone_at_open() {
    let path = support::temp("graph-lost");
    let q = support::open_default(&path).unwrap();
    let (parent, child) = parent_and_child(&q);
    let parent_row = {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let row: Vec<u8> = conn
            .query_row("SELECT record FROM graph WHERE node = 0", [], |r| r.get(0))
            .unwrap();
        row
    };
    assert_eq!(item(&q).as_deref(), Some(&b"parent"[..]));
    leaseq_test_kit::sqlite::shut(q);
    {
        // The child's release lost: its row pending again, the parent's acked, no item.
        let conn = rusqlite::Connection::open(&path).unwrap();
        let child_row: Vec<u8> = conn
            .query_row("SELECT record FROM graph WHERE node = 1", [], |r| r.get(0))
            .unwrap();
        let message = conn.query_row("SELECT max(id) FROM items", [], |r| r.get::<_, i64>(0));
        conn.execute("DELETE FROM items", []).unwrap();
        let pending = set_state(&child_row, 0, 0);
        conn.execute(
            "UPDATE graph SET record = ?1, payload = ?2 WHERE node = 1",
            rusqlite::params![pending, b"child".to_vec()],
        )
        .unwrap();
        let acked = set_state(&parent_row, 4, parent.get());
        conn.execute("UPDATE graph SET record = ?1 WHERE node = 0", [acked])
            .unwrap();
        assert!(message.is_ok());
    }
    let q = support::open_default(&path).unwrap();
    let d = q.try_receive().expect("released at open");
    assert_eq!(d.item(), b"child");
    let state = smol::block_on(q.store().job_state(child)).unwrap();
    assert_eq!(state, Some(StepState::Queued(d.id())));
    smol::block_on(d.ack()).unwrap();
    let q = reopen(q, &path);
    assert!(q.try_receive().is_none(), "released once");
    leaseq_test_kit::sqlite::shut(q);
    support::remove(&path);
}

/// A crash before an ack's commit (the writer stopped as a dying process's would): the
/// release the ack made in memory is gone with it, so after the reopen the parent runs
/// again and its dependent is released once, by that ack.
#[cfg(feature = "fault-injection")]
#[test]
fn a_crash_before_the_ack_commits_keeps_neither_the_ack_nor_the_release() {
    let path = support::temp("graph-crash");
    let q = support::open_default(&path).unwrap();
    let (_, child) = parent_and_child(&q);
    let d = smol::block_on(q.receive()).unwrap();
    q.store().halt();
    let acked = smol::block_on(d.ack());
    assert!(acked.is_err(), "not committed: {acked:?}");
    let state = smol::block_on(q.store().job_state(child)).unwrap();
    assert!(
        matches!(state, Some(StepState::Queued(_))),
        "released in memory only: {state:?}"
    );
    leaseq_test_kit::sqlite::crash(q, ());
    let q = support::open_default(&path).unwrap();
    let d = q.try_receive().expect("the parent, back");
    assert_eq!(d.item(), b"parent");
    assert!(q.try_receive().is_none(), "the child waits again");
    assert_eq!(
        smol::block_on(q.store().job_state(child)).unwrap(),
        Some(StepState::Pending)
    );
    smol::block_on(d.ack()).unwrap();
    let q = reopen(q, &path);
    assert_eq!(item(&q).as_deref(), Some(&b"child"[..]));
    assert!(q.try_receive().is_none(), "once");
    leaseq_test_kit::sqlite::shut(q);
    support::remove(&path);
}

/// A record with its state (code at byte 12 + 8 * parents, then the message) replaced.
fn set_state(record: &[u8], code: u8, message: u64) -> Vec<u8> {
    let parents = u32::from_le_bytes(record[8..12].try_into().unwrap()) as usize;
    let at = 12 + 8 * parents + 1;
    let mut r = record.to_vec();
    r[at] = code;
    r[at + 1..at + 9].copy_from_slice(&message.to_le_bytes());
    r
}

#[test]
fn a_format_6_file_is_migrated_to_8() {
    let path = support::temp("graph-v6");
    let q = support::open_default(&path).unwrap();
    let old = q.try_push(b"old".to_vec()).unwrap();
    leaseq_test_kit::sqlite::shut(q);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(support::BEFORE_FLOW).unwrap();
        conn.execute_batch("DROP TABLE graph; PRAGMA user_version = 6;")
            .unwrap();
    }
    let q = support::open_default(&path).unwrap();
    let node = smol::block_on(q.store().push_after(
        b"new".to_vec(),
        &[Parent::Message(old)],
        OnFailedParent::Cancel,
    ))
    .unwrap();
    assert_eq!(node, NodeId::new(1), "the adopted parent is node 0");
    leaseq_test_kit::sqlite::shut(q);
    assert_eq!(support::user_version(&path), FORMAT_VERSION);
    assert_eq!(FORMAT_VERSION, 8);
    let q = support::open_default(&path).unwrap();
    assert_eq!(
        item(&q).as_deref(),
        Some(&b"old"[..]),
        "its lease cut by the close"
    );
    assert_eq!(item(&q).as_deref(), Some(&b"new"[..]));
    leaseq_test_kit::sqlite::shut(q);
    support::remove(&path);
}

/// A job above the file's item size is refused and handed back; nothing is kept.
#[test]
fn a_job_too_large_is_refused_and_handed_back() {
    let path = support::temp("graph-large");
    let q = support::open_with(&path, Options::new().max_item_size(8)).unwrap();
    let refused = smol::block_on(
        q.store()
            .push_after(vec![0; 9], &[], OnFailedParent::Cancel),
    )
    .unwrap_err();
    assert!(matches!(refused.error, DependencyError::Store(ref e) if !e.is_outcome_unknown()));
    assert_eq!(refused.payload, vec![0; 9]);
    assert!(q.try_receive().is_none());
    leaseq_test_kit::sqlite::shut(q);
    support::remove(&path);
}
