//! The bulk cancel of a queue's waiting items (`/queues/{queue}/cancel`): all, or those of
//! a job kind and an id range ([`LiveQuery`]). Ready and delayed items only, as the queue's
//! own `cancel`: an item in flight stays with its holder. A GET shows the filter and a
//! confirmation with the count it takes; the POST (with the CSRF token and that count) is
//! refused, nothing done, when the count changed since (409, with a new confirmation); an
//! item that goes in flight between the count and its cancel is skipped, so the count
//! done can be below the one confirmed. Logged through `tracing` with who did it.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::{Extension, Form};

use crate::auth::Who;
use crate::html::Html;
use crate::layout::App;
use crate::operator::Operator;
use crate::pages::actions::who;
use crate::query::{LiveQuery, QueryForm};

/// The link to the bulk cancel from the queue's live items, where the dashboard can.
pub(crate) fn link<O: Operator>(app: &App<O>, h: &mut Html, queue: &str) {
    if app.acts(app.op.capabilities().cancel) {
        h.raw("<p class=\"bulk\"><a id=\"cancel\" href=\"")
            .text(&app.queue_link(queue, "/cancel"))
            .raw("\">Cancel waiting items...</a></p>");
    }
}

/// The filter (a GET form: it changes nothing but the count shown).
fn filter_form<O: Operator>(app: &App<O>, h: &mut Html, queue: &str, query: &LiveQuery) {
    let id = |v: Option<leaseq_core::MessageId>| v.map_or(String::new(), |i| i.get().to_string());
    h.raw("<form method=\"get\" class=\"filter\" action=\"")
        .text(&app.queue_link(queue, "/cancel"))
        .raw("\"><label>Job kind <input name=\"kind\" value=\"")
        .text(query.kind.as_deref().unwrap_or(""))
        .raw("\"></label> <label>Ids from <input name=\"min_id\" inputmode=\"numeric\" value=\"")
        .text(&id(query.min_id))
        .raw("\"></label> <label>to <input name=\"max_id\" inputmode=\"numeric\" value=\"")
        .text(&id(query.max_id))
        .raw("\"></label> <button type=\"submit\">Count</button></form>");
}

/// The confirmation text and form for `count` waiting items, those `query` takes.
fn confirm<O: Operator>(app: &App<O>, h: &mut Html, queue: &str, query: &LiveQuery, count: u64) {
    h.raw("<p id=\"confirm\">This cancels <strong id=\"cancel-count\">")
        .show(count)
        .raw("</strong> waiting (ready and delayed) items")
        .text(&query.words())
        .raw(" of queue ")
        .text(queue)
        .raw(" for good; items in flight stay with their holders.</p>");
    let mut fields = vec![("expected", count.to_string())];
    fields.extend(query.fields());
    app.form(
        h,
        &app.queue_link(queue, "/cancel"),
        &fields,
        &format!("Cancel {count} items"),
    );
}

/// GET `/queues/{queue}/cancel`: the filter and the confirmation, with the count.
pub(crate) async fn cancel_confirm<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path(queue): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if !app.acts(app.op.capabilities().cancel) {
        return app.message(StatusCode::FORBIDDEN, "this dashboard cannot do that here");
    }
    let query = match LiveQuery::parse(&q) {
        Ok(query) => query,
        Err(e) => return app.message(StatusCode::BAD_REQUEST, &e),
    };
    let n = match app.op.count_live(&queue, &query).await {
        Ok(n) => n,
        Err(e) => return app.error(&e),
    };
    let mut h = Html::new();
    h.raw("<h1>Cancel the waiting items of ")
        .text(&queue)
        .raw("?</h1>");
    filter_form(&app, &mut h, &queue, &query);
    confirm(&app, &mut h, &queue, &query, n);
    app.page(StatusCode::OK, "Confirm", &h)
}

/// POST `/queues/{queue}/cancel`: the cancel, if the count is still the one confirmed.
pub(crate) async fn cancel<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path(queue): Path<String>,
    by: Option<Extension<Who>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    if let Some(refused) = app.refuse(&form, app.op.capabilities().cancel) {
        return refused;
    }
    let Some(expected) = form.get("expected").and_then(|s| s.parse::<u64>().ok()) else {
        return app.message(StatusCode::BAD_REQUEST, "no confirmed count");
    };
    let query = match LiveQuery::parse(&form) {
        Ok(query) => query,
        Err(e) => return app.message(StatusCode::BAD_REQUEST, &e),
    };
    let now = match app.op.count_live(&queue, &query).await {
        Ok(n) => n,
        Err(e) => return app.error(&e),
    };
    if now != expected {
        let mut h = Html::new();
        h.raw("<h1>The count changed</h1><p class=\"error\">Queue ")
            .text(&queue)
            .raw(" now holds ")
            .show(now)
            .raw(" waiting items")
            .text(&query.words())
            .raw(", not the ")
            .show(expected)
            .raw(" confirmed: nothing was done.</p>");
        confirm(&app, &mut h, &queue, &query, now);
        return app.page(StatusCode::CONFLICT, "Confirm again", &h);
    }
    let by = who(by);
    let n = match app.op.cancel(&queue, &query).await {
        Ok(n) => n,
        Err(e) => {
            tracing::info!(action = "cancel", queue = %queue, filter = %query.words(), by = %by, error = %e, "leaseq-web: action failed");
            return app.error(&e);
        }
    };
    tracing::info!(action = "cancel", queue = %queue, filter = %query.words(), confirmed = expected, done = n, by = %by, "leaseq-web: action");
    let mut h = Html::new();
    h.raw("<h1>Cancelled</h1><p id=\"done\"><span id=\"cancelled\">")
        .show(n)
        .raw("</span> of ")
        .show(expected)
        .raw(" waiting items of ")
        .text(&queue)
        .raw(" cancelled (one that went in flight since the count stays with its holder).</p><p><a href=\"")
        .text(&app.queue_link(&queue, ""))
        .raw("\">Queue ")
        .text(&queue)
        .raw("</a></p>");
    app.page(StatusCode::OK, "Done", &h)
}
