//! The actions, each a POST carrying the CSRF token: redrive one dead letter
//! (`/queues/{queue}/items/{id}/redrive`) and delete a queue's dead letters
//! (all, or those of a reason or job kind: `/queues/{queue}/purge-dead?reason=..&kind=..`,
//! after a confirmation page that shows the count; refused when the count changed since). Each is logged through `tracing` with who did it, where
//! the dashboard's own [`Auth`](crate::Auth) knows.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::{Extension, Form};
use leaseq_async::Page;
use leaseq_core::MessageId;

use crate::auth::Who;
use crate::html::Html;
use crate::layout::App;
use crate::operator::{Operator, OperatorError};
use crate::query::DeadQuery;

fn who(w: Option<Extension<Who>>) -> String {
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

/// The confirmation form of a purge of `count` dead letters, those `query` takes.
fn confirm<O: Operator>(app: &App<O>, h: &mut Html, queue: &str, query: &DeadQuery, count: u64) {
    h.raw("<p id=\"confirm\">This deletes <strong id=\"purge-count\">")
        .show(count)
        .raw("</strong> dead letters")
        .text(&query.words())
        .raw(" of queue ")
        .text(queue)
        .raw(" for good.</p>");
    let mut fields = vec![("expected", count.to_string())];
    if let Some(r) = query.reason {
        fields.push(("reason", r.as_str().replace(' ', "-")));
    }
    if let Some(k) = &query.kind {
        fields.push(("kind", k.clone()));
    }
    app.form(
        h,
        &app.queue_link(queue, "/purge-dead"),
        &fields,
        &format!("Delete {count} dead letters"),
    );
}

/// How many dead letters of `queue` `query` takes: the count by state for all, else
/// counted a page of 1,000 at a time.
async fn count<O: Operator>(
    app: &App<O>,
    queue: &str,
    query: &DeadQuery,
) -> Result<u64, OperatorError> {
    if query.is_all() {
        return Ok(app.op.counts(queue).await?.dead);
    }
    const PAGE: usize = 1000;
    let mut n = 0;
    let mut page = Page::first(PAGE);
    loop {
        let items = app.op.dead_letters(queue, page, query).await?;
        n += items.len() as u64;
        match items.last() {
            Some(last) if items.len() >= PAGE => page = Page::first(PAGE).next(last.id),
            _ => return Ok(n),
        }
    }
}

/// GET: the purge's confirmation, with the count it would delete.
pub(crate) async fn purge_confirm<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path(queue): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if !app.acts(app.op.capabilities().purge) {
        return app.message(StatusCode::FORBIDDEN, "this dashboard cannot delete here");
    }
    let query = match DeadQuery::parse(&q) {
        Ok(query) => query,
        Err(e) => return app.message(StatusCode::BAD_REQUEST, &e),
    };
    let n = match count(&app, &queue, &query).await {
        Ok(n) => n,
        Err(e) => return app.error(&e),
    };
    let mut h = Html::new();
    h.raw("<h1>Delete the dead letters of ")
        .text(&queue)
        .raw("?</h1>");
    confirm(&app, &mut h, &queue, &query, n);
    app.page(StatusCode::OK, "Confirm", &h)
}

/// POST: deletes the dead letters, if their count is still the one confirmed.
pub(crate) async fn purge<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path(queue): Path<String>,
    by: Option<Extension<Who>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    if let Some(refused) = app.refuse(&form, app.op.capabilities().purge) {
        return refused;
    }
    let Some(expected) = form.get("expected").and_then(|s| s.parse::<u64>().ok()) else {
        return app.message(StatusCode::BAD_REQUEST, "no confirmed count");
    };
    let query = match DeadQuery::parse(&form) {
        Ok(query) => query,
        Err(e) => return app.message(StatusCode::BAD_REQUEST, &e),
    };
    let now = match count(&app, &queue, &query).await {
        Ok(n) => n,
        Err(e) => return app.error(&e),
    };
    if now != expected {
        let mut h = Html::new();
        h.raw("<h1>The count changed</h1><p class=\"error\">Queue ")
            .text(&queue)
            .raw(" now holds ")
            .show(now)
            .raw(" dead letters")
            .text(&query.words())
            .raw(", not the ")
            .show(expected)
            .raw(" confirmed: nothing was deleted.</p>");
        confirm(&app, &mut h, &queue, &query, now);
        return app.page(StatusCode::CONFLICT, "Confirm again", &h);
    }
    let by = who(by);
    match app.op.purge_dead(&queue, &query).await {
        Ok(n) => {
            tracing::info!(action = "purge-dead", queue = %queue, filter = %query.words(), deleted = n, by = %by, "leaseq-web: action");
            let mut h = Html::new();
            h.raw("<h1>Deleted</h1><p id=\"done\"><span id=\"deleted\">")
                .show(n)
                .raw("</span> dead letters of ")
                .text(&queue)
                .raw(" deleted.</p><p><a href=\"")
                .text(&app.queue_link(&queue, ""))
                .raw("\">Queue ")
                .text(&queue)
                .raw("</a></p>");
            app.page(StatusCode::OK, "Deleted", &h)
        }
        Err(e) => {
            tracing::info!(action = "purge-dead", queue = %queue, by = %by, error = %e, "leaseq-web: action failed");
            app.error(&e)
        }
    }
}
