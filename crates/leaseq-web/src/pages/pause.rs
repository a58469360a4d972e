//! Pause and resume a queue (`POST /queues/{queue}/pause`, `POST /queues/{queue}/resume`,
//! each with the CSRF token), logged through `tracing` with who did it where known; and
//! the queue page's status card with its button.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::{Extension, Form};
use leaseq_async::StoredCounts;

use crate::auth::Who;
use crate::html::Html;
use crate::layout::App;
use crate::operator::Operator;
use crate::pages::actions::who;

/// The queue page's status card ("Paused" or "Running") and, where the dashboard acts, the
/// button that flips it.
pub(crate) fn status<O: Operator>(app: &App<O>, h: &mut Html, c: &StoredCounts) {
    h.raw("<div class=\"card\"><div class=\"k\">Status</div><div class=\"v\" id=\"status\" data-paused=\"")
        .raw(if c.paused { "true\">Paused" } else { "false\">Running" })
        .raw("</div>");
    if app.acts(app.op.capabilities().pause) {
        let (rest, button) = if c.paused {
            ("/resume", "Resume")
        } else {
            ("/pause", "Pause")
        };
        app.form(h, &app.queue_link(&c.queue, rest), &[], button);
    }
    h.raw("</div>");
}

/// POST: the queue paused.
pub(crate) async fn pause<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path(queue): Path<String>,
    by: Option<Extension<Who>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    set(&app, &queue, true, by, &form).await
}

/// POST: the queue resumed.
pub(crate) async fn resume<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path(queue): Path<String>,
    by: Option<Extension<Who>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    set(&app, &queue, false, by, &form).await
}

async fn set<O: Operator>(
    app: &App<O>,
    queue: &str,
    paused: bool,
    by: Option<Extension<Who>>,
    form: &HashMap<String, String>,
) -> Response {
    if let Some(refused) = app.refuse(form, app.op.capabilities().pause) {
        return refused;
    }
    let action = if paused { "pause" } else { "resume" };
    let by = who(by);
    match app.op.set_paused(queue, paused).await {
        Ok(changed) => {
            tracing::info!(action, queue = %queue, changed, by = %by, "leaseq-web: action");
            let (title, text) = match (paused, changed) {
                (true, true) => ("Paused", " is paused: no lease is handed out until it is resumed; pushes are still accepted."),
                (true, false) => ("Paused", " was already paused."),
                (false, true) => ("Resumed", " is running again: its claims hand out leases."),
                (false, false) => ("Resumed", " was not paused."),
            };
            let mut h = Html::new();
            h.raw("<h1>")
                .raw(title)
                .raw("</h1><p id=\"done\" data-changed=\"")
                .raw(if changed { "true" } else { "false" })
                .raw("\">Queue ")
                .text(queue)
                .raw(text)
                .raw("</p><p><a href=\"")
                .text(&app.queue_link(queue, ""))
                .raw("\">Queue ")
                .text(queue)
                .raw("</a></p>");
            app.page(StatusCode::OK, title, &h)
        }
        Err(e) => {
            tracing::info!(action, queue = %queue, by = %by, error = %e, "leaseq-web: action failed");
            app.error(&e)
        }
    }
}
