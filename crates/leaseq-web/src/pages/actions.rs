//! Redrive one dead letter from its page (`POST /queues/{queue}/items/{id}/redrive`, with
//! the CSRF token), logged through `tracing` with who did it, where the dashboard's own
//! [`Auth`](crate::Auth) knows. The bulk actions are in `bulk.rs`.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::{Extension, Form};
use leaseq_core::MessageId;

use crate::auth::Who;
use crate::html::Html;
use crate::layout::App;
use crate::operator::Operator;

/// Who made the request, for the action log.
pub(crate) fn who(w: Option<Extension<Who>>) -> String {
    w.map_or_else(
        || "unauthenticated (loopback or the app's own middleware)".into(),
        |w| w.0 .0,
    )
}

/// POST: the dead letter back in the queue.
pub(crate) async fn redrive<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path((queue, id)): Path<(String, String)>,
    by: Option<Extension<Who>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    if let Some(refused) = app.refuse(&form, app.op.capabilities().redrive) {
        return refused;
    }
    let Ok(id) = id.parse::<u64>() else {
        return app.message(
            StatusCode::BAD_REQUEST,
            &format!("{id:?} is not an item id"),
        );
    };
    let by = who(by);
    match app.op.redrive(&queue, MessageId::new(id)).await {
        Ok(()) => {
            tracing::info!(action = "redrive", queue = %queue, id, by = %by, "leaseq-web: action");
            let mut h = Html::new();
            h.raw("<h1>Redriven</h1><p id=\"done\">Dead letter ")
                .show(id)
                .raw(" is ready again, its attempts reset.</p><p><a href=\"")
                .text(&app.queue_link(&queue, "/dead"))
                .raw("\">Dead letters of ")
                .text(&queue)
                .raw("</a></p>");
            app.page(StatusCode::OK, "Redriven", &h)
        }
        Err(e) => {
            tracing::info!(action = "redrive", queue = %queue, id, by = %by, error = %e, "leaseq-web: action failed");
            app.error(&e)
        }
    }
}
