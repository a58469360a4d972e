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
        "this store's operator does not offer workflows and batches (a queue of a running \
         service on the memory store does, through its dashboard)"
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
