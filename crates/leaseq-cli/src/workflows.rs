//! `workflows`, `workflow ID`, `batches`, `batch ID`, `cancel-workflow ID`, `retry-step ID
//! STEP`: the jobs that wait for jobs, once for every store, through its [`Operator`]. A
//! store whose operator does not offer them (`Capabilities::workflows`) is said so, exit 1.
//! The tables and JSON are in [`crate::workflows_show`].

use clap::Args;
use leaseq_async::core::graph::{BatchId, WorkflowId};
use leaseq_async::operator::{Operator, OperatorError};
use serde_json::json;

use crate::args::{Command, Output};
use crate::operate::Failed;
use crate::output::Shown;
use crate::workflows_show as show;

/// A page of workflows or batches.
#[derive(Debug, Args)]
pub(crate) struct GraphPaged {
    /// At most this many.
    #[arg(long, default_value_t = 50)]
    pub(crate) limit: usize,
    /// Only ids above this one (the last id of the previous page).
    #[arg(long)]
    pub(crate) after: Option<u64>,
    #[command(flatten)]
    pub(crate) output: Output,
}

/// One workflow or batch, by its id.
#[derive(Debug, Args)]
pub(crate) struct GraphId {
    /// Its id (as `workflows` or `batches` lists it).
    pub(crate) id: u64,
    #[command(flatten)]
    pub(crate) output: Output,
}

/// `cancel-workflow`.
#[derive(Debug, Args)]
pub(crate) struct CancelWorkflow {
    /// The workflow's id.
    pub(crate) id: u64,
    /// Really cancel (without it, nothing is done and the exit status is 2).
    #[arg(long)]
    pub(crate) yes: bool,
    #[command(flatten)]
    pub(crate) output: Output,
}

/// `retry-step`.
#[derive(Debug, Args)]
pub(crate) struct RetryStep {
    /// The workflow's id.
    pub(crate) id: u64,
    /// The failed step's name.
    pub(crate) step: String,
    #[command(flatten)]
    pub(crate) output: Output,
}

/// What a store without workflows answers.
fn not_offered() -> Failed {
    Failed::read(OperatorError::Refused(
        "this store's operator does not offer workflows and batches (SQLite files and \
         Postgres schemas do when opened with actions; memory queues through their \
         service's dashboard)"
            .into(),
    ))
}

/// Runs a workflow or batch `command` on `queue` through `op`.
pub(crate) async fn run<O: Operator>(
    op: &O,
    queue: &str,
    command: &Command,
) -> Result<Shown, Failed> {
    if !op.capabilities().workflows {
        return Err(not_offered());
    }
    match command {
        Command::Workflows(p) => {
            let after = p.after.map(WorkflowId::new);
            let all = op
                .workflows(queue, after, p.limit)
                .await
                .map_err(Failed::read)?;
            Ok(Shown::new(
                show::workflows_table(&all),
                show::workflows_json(&all),
            ))
        }
        Command::Workflow(w) => {
            let one = op
                .workflow(queue, WorkflowId::new(w.id))
                .await
                .map_err(Failed::read)?;
            let Some(one) = one else {
                return Err(no_such("workflow", w.id));
            };
            Ok(Shown::new(
                show::workflow_table(&one),
                show::workflow_json(&one),
            ))
        }
        Command::Batches(p) => {
            let after = p.after.map(BatchId::new);
            let all = op
                .batches(queue, after, p.limit)
                .await
                .map_err(Failed::read)?;
            Ok(Shown::new(
                show::batches_table(&all),
                show::batches_json(&all),
            ))
        }
        Command::Batch(b) => {
            let one = op
                .batch(queue, BatchId::new(b.id))
                .await
                .map_err(Failed::read)?;
            let Some(one) = one else {
                return Err(no_such("batch", b.id));
            };
            Ok(Shown::new(show::batch_table(&one), show::batch_json(&one)))
        }
        Command::CancelWorkflow(c) => {
            let n = op
                .cancel_workflow(queue, WorkflowId::new(c.id))
                .await
                .map_err(|e| Failed::doing(format!("cancel workflow {}", c.id), e))?;
            Ok(Shown::new(
                format!("cancelled: {n} steps of workflow {}\n", c.id),
                json!({ "workflow": c.id, "cancelled": n }),
            ))
        }
        Command::RetryStep(r) => {
            op.retry_step(queue, WorkflowId::new(r.id), &r.step)
                .await
                .map_err(|e| Failed::doing(format!("retry step {:?}", r.step), e))?;
            Ok(Shown::new(
                format!(
                    "retried: step {:?} of workflow {} runs again\n",
                    r.step, r.id
                ),
                json!({ "workflow": r.id, "retried": r.step }),
            ))
        }
        _ => Err(Failed::not_this_command()),
    }
}

/// No workflow or batch of this id.
fn no_such(what: &str, id: u64) -> Failed {
    Failed::doing(
        format!("{what} {id}"),
        OperatorError::Refused(format!("no {what} has this id")),
    )
}

#[cfg(test)]
mod tests {
    //! The commands over an operator that offers workflows (a `LocalOperator` on a memory
    //! queue of this process): what the tables and JSON show.

    use std::time::Duration;

    use leaseq_async::dependencies::{BatchOn, DependencyStore, WorkflowSpec};
    use leaseq_async::operator::LocalOperator;
    use leaseq_tokio::{Config, Failure, LeaseQueue};

    use super::*;

    fn output() -> Output {
        Output { json: false }
    }

    /// Runs `command` on `media` through `op`, the table shown.
    async fn table(op: &LocalOperator, command: Command) -> (String, serde_json::Value) {
        let shown = run(op, "media", &command).await.unwrap();
        (shown.table().to_string(), shown.json().clone())
    }

    #[test]
    fn the_tables_show_each_steps_state_attempts_error_and_a_batchs_counts() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let q: LeaseQueue<Vec<u8>> =
                LeaseQueue::builder(Config::new(Duration::from_secs(30)).with_max_attempts(1))
                    .name("media")
                    .build()
                    .unwrap();
            let op = LocalOperator::new().with_graph(q.clone());
            let spec = WorkflowSpec::new()
                .step("resize", b"resize".to_vec(), &[])
                .step("upload", b"upload".to_vec(), &["resize"]);
            q.store().push_workflow(spec).await.unwrap();
            let d = q.receive().await.unwrap();
            d.nack_with(Failure::error("disk full")).await.unwrap();
            let children = vec![b"a".to_vec(), b"b".to_vec()];
            q.store()
                .push_batch(children, b"report".to_vec(), BatchOn::Complete)
                .await
                .unwrap();

            let paged = || GraphPaged {
                limit: 50,
                after: None,
                output: output(),
            };
            let (t, json) = table(&op, Command::Workflows(paged())).await;
            println!("{t}");
            assert_eq!(
                t.lines().collect::<Vec<_>>(),
                [
                    "workflow  status  done  steps",
                    "0         failed  0/2   resize: dead-lettered, upload: cancelled",
                ]
            );
            assert_eq!(json[0]["steps"][0]["last_error"], "disk full");

            let one = GraphId {
                id: 0,
                output: output(),
            };
            let (t, _) = table(&op, Command::Workflow(one)).await;
            println!("{t}");
            let lines: Vec<&str> = t.lines().collect();
            assert_eq!(lines[0], "workflow 0: failed, 0 of 2 steps done");
            assert!(lines[1].starts_with("step    status         after   attempts"));
            assert!(
                lines[2].starts_with("resize  dead-lettered  -       1 ")
                    && lines[2].ends_with("disk full"),
                "{t}"
            );
            assert!(
                lines[3].starts_with("upload  cancelled      resize  -"),
                "{t}"
            );

            let (t, json) = table(&op, Command::Batches(paged())).await;
            println!("{t}");
            assert!(t.starts_with("batch  callback runs  children  open"), "{t}");
            assert!(t
                .lines()
                .nth(1)
                .unwrap()
                .starts_with("0      on complete    2         2"));
            assert_eq!(json[0]["callback"]["status"], "waiting");

            let missing = GraphId {
                id: 9,
                output: output(),
            };
            let f = run(&op, "media", &Command::Workflow(missing))
                .await
                .unwrap_err();
            assert_eq!(f.message(""), "workflow 9: no workflow has this id");

            let retry = RetryStep {
                id: 0,
                step: "resize".into(),
                output: output(),
            };
            let (t, _) = table(&op, Command::RetryStep(retry)).await;
            assert_eq!(t, "retried: step \"resize\" of workflow 0 runs again\n");
            let cancel = CancelWorkflow {
                id: 0,
                yes: true,
                output: output(),
            };
            let (t, _) = table(&op, Command::CancelWorkflow(cancel)).await;
            assert!(
                t.starts_with("cancelled: ") && t.ends_with(" steps of workflow 0\n"),
                "{t}"
            );
        });
    }
}
