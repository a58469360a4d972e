//! A workflow's actions: cancel what is left (`POST /queues/{queue}/workflows/{id}/cancel`)
//! and retry a failed step (`POST /queues/{queue}/workflows/{id}/retry`, the step in the
//! form), each with the CSRF token, where the operator offers workflows and the action
//! (`cancel`, `redrive`), logged through `tracing` with who did it; and their buttons on the
//! workflow's page.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::{Extension, Form};
use leaseq_async::core::graph::WorkflowId;
use leaseq_async::operator::{StepStatus, StepView, WorkflowView};

use crate::auth::Who;
use crate::html::Html;
use crate::layout::App;
use crate::operator::Operator;
use crate::pages::actions::who;

/// Whether the operator cancels workflows.
fn cancels<O: Operator>(app: &App<O>) -> bool {
    let c = app.op.capabilities();
    c.workflows && c.cancel
}

/// Whether the operator retries steps.
fn retries<O: Operator>(app: &App<O>) -> bool {
    let c = app.op.capabilities();
    c.workflows && c.redrive
}

/// The link to a workflow's page, plus `rest`.
fn workflow_link<O: Operator>(app: &App<O>, queue: &str, id: WorkflowId, rest: &str) -> String {
    app.queue_link(queue, &format!("/workflows/{}{rest}", id.get()))
}

/// The "Cancel workflow" button, while a step is left to cancel.
pub(crate) fn cancel_button<O: Operator>(
    app: &App<O>,
    h: &mut Html,
    queue: &str,
    w: &WorkflowView,
) {
    let left = w.steps.iter().any(|s| !s.status.is_finished());
    if left && app.acts(cancels(app)) {
        let action = workflow_link(app, queue, w.id, "/cancel");
        app.form(h, &action, &[], "Cancel workflow");
    }
}

/// A failed step's "Retry" button.
pub(crate) fn retry_button<O: Operator>(
    app: &App<O>,
    h: &mut Html,
    queue: &str,
    w: &WorkflowView,
    s: &StepView,
) {
    let failed = matches!(s.status, StepStatus::DeadLettered | StepStatus::Cancelled);
    if failed && app.acts(retries(app)) {
        let action = workflow_link(app, queue, w.id, "/retry");
        app.form(h, &action, &[("step", s.name.clone())], "Retry");
    }
}

/// The workflow id in a path (`None`: not a number).
fn id_of(id: &str) -> Option<WorkflowId> {
    id.parse::<u64>().ok().map(WorkflowId::new)
}

/// The 400 page for a path's id that is not one.
fn bad_id<O: Operator>(app: &App<O>, id: &str) -> Response {
    app.message(
        StatusCode::BAD_REQUEST,
        &format!("{id:?} is not a workflow id"),
    )
}

/// The page after an action: `text` and a link back to the workflow.
fn done<O: Operator>(
    app: &App<O>,
    queue: &str,
    id: WorkflowId,
    title: &str,
    text: &str,
) -> Response {
    let mut h = Html::new();
    h.raw("<h1>")
        .text(title)
        .raw("</h1><p id=\"done\">")
        .text(text)
        .raw("</p><p><a href=\"")
        .text(&workflow_link(app, queue, id, ""))
        .raw("\">Workflow ")
        .show(id.get())
        .raw("</a></p>");
    app.page(StatusCode::OK, title, &h)
}

/// POST: what is left of the workflow cancelled.
pub(crate) async fn cancel<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path((queue, id)): Path<(String, String)>,
    by: Option<Extension<Who>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    if let Some(refused) = app.refuse(&form, cancels(&app)) {
        return refused;
    }
    let Some(id) = id_of(&id) else {
        return bad_id(&app, &id);
    };
    let (by, n) = (who(by), id.get());
    match app.op.cancel_workflow(&queue, id).await {
        Ok(count) => {
            tracing::info!(action = "cancel workflow", queue = %queue, workflow = n, count, by = %by, "leaseq-web: action");
            let text = format!("Workflow {n}: {count} steps cancelled.");
            done(&app, &queue, id, "Cancelled", &text)
        }
        Err(e) => {
            tracing::info!(action = "cancel workflow", queue = %queue, workflow = n, by = %by, error = %e, "leaseq-web: action failed");
            app.error(&e)
        }
    }
}

/// POST: a failed step retried.
pub(crate) async fn retry<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path((queue, id)): Path<(String, String)>,
    by: Option<Extension<Who>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    if let Some(refused) = app.refuse(&form, retries(&app)) {
        return refused;
    }
    let Some(id) = id_of(&id) else {
        return bad_id(&app, &id);
    };
    let Some(step) = form.get("step").filter(|s| !s.is_empty()) else {
        return app.message(StatusCode::BAD_REQUEST, "no step named to retry");
    };
    let (by, n) = (who(by), id.get());
    match app.op.retry_step(&queue, id, step).await {
        Ok(()) => {
            tracing::info!(action = "retry step", queue = %queue, workflow = n, step = %step, by = %by, "leaseq-web: action");
            let text = format!("Workflow {n}: step {step} runs again, and the steps it holds.");
            done(&app, &queue, id, "Retried", &text)
        }
        Err(e) => {
            tracing::info!(action = "retry step", queue = %queue, workflow = n, step = %step, by = %by, error = %e, "leaseq-web: action failed");
            app.error(&e)
        }
    }
}
