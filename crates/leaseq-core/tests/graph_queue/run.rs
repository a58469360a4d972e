//! The runs: random DAGs beside a queue, batch counts through redeliveries.

use super::*;

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => Just(Op::Receive),
        5 => any::<Index>().prop_map(Op::Ack),
        2 => any::<Index>().prop_map(Op::Nack),
        1 => any::<Index>().prop_map(Op::Poison),
        2 => (1u64..15).prop_map(Op::Advance),
        1 => any::<Index>().prop_map(Op::Cancel),
        1 => any::<Index>().prop_map(Op::Redrive),
        1 => any::<Index>().prop_map(Op::Retry),
        1 => any::<Index>().prop_map(Op::ReleaseHeld),
        1 => Just(Op::Restart),
    ]
}

fn policy() -> impl Strategy<Value = OnFailedParent> {
    prop_oneof![
        Just(OnFailedParent::Cancel),
        Just(OnFailedParent::Run),
        Just(OnFailedParent::Hold)
    ]
}

#[test]
fn random_dags_beside_a_queue() {
    let dag = prop::collection::vec(
        (prop::collection::vec(any::<Index>(), 0..=3), policy()),
        1..16,
    );
    let mut runner = TestRunner::new(seed_config(600, 0x00da_6001));
    runner
        .run(&(dag, prop::collection::vec(op(), 0..120)), |(dag, ops)| {
            let mut s = Store::new();
            for (i, (ps, policy)) in dag.into_iter().enumerate() {
                let ps = parents_of(i, &ps);
                s.add(ps, policy);
            }
            for op in &ops {
                s.step(op);
            }
            s.finish();
            Ok(())
        })
        .unwrap();
}

#[test]
fn batch_counts_are_exact_through_redeliveries() {
    let on = prop_oneof![Just(BatchOn::Success), Just(BatchOn::Complete)];
    let mut runner = TestRunner::new(seed_config(600, 0x00da_6002));
    runner
        .run(
            &(0usize..12, on, prop::collection::vec(op(), 0..150)),
            |(n, on, ops)| {
                let mut s = Store::new();
                s.add_batch(n, on);
                for op in &ops {
                    s.step(op);
                }
                s.finish();
                let callback = n;
                let (batch, children) = s.batch.clone().unwrap();
                let counts = s.graph.batch_counts(batch).unwrap();
                assert_eq!(counts.open, 0, "every child finished");
                let all_acked = children.iter().all(|&c| s.status[c] == Status::Acked);
                let released = s.released.contains(&callback);
                match on {
                    BatchOn::Complete => assert!(
                        released || s.status[callback] == Status::Cancelled,
                        "on complete: callback released once every child finished"
                    ),
                    _ => assert_eq!(
                        released || s.status[callback] == Status::Cancelled,
                        all_acked || s.policy[callback] == OnFailedParent::Run,
                        "on success: released iff all acked (or released by hand)"
                    ),
                }
                Ok(())
            },
        )
        .unwrap();
}
