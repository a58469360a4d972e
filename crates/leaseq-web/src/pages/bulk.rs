//! The bulk actions on a queue's dead letters (all, or those of a reason or job kind):
//! redrive (`/queues/{queue}/redrive-dead`) and delete (`/queues/{queue}/purge-dead`). A GET
//! shows the confirmation with the count the filter takes; the POST (with the CSRF token
//! and that count) is refused, nothing done, when the count changed since (409, with a new
//! confirmation). Each is logged through `tracing` with who did it.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::{Extension, Form};
use leaseq_async::Page;

use crate::auth::Who;
use crate::html::Html;
use crate::layout::App;
use crate::operator::{Capabilities, Operator, OperatorError};
use crate::pages::actions::who;
use crate::query::{DeadQuery, QueryForm};

/// A bulk action on dead letters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bulk {
    /// Back in the queue, attempts reset.
    Redrive,
    /// Deleted for good.
    Purge,
}

impl Bulk {
    /// Its path under the queue's, its name in the log and the element ids of its pages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Bulk::Redrive => "redrive-dead",
            Bulk::Purge => "purge-dead",
        }
    }

    /// Whether an operator of these capabilities can do it.
    pub(crate) fn able(self, c: Capabilities) -> bool {
        match self {
            Bulk::Redrive => c.redrive,
            Bulk::Purge => c.purge,
        }
    }

    /// The link to it: "Redrive all dead letters...".
    pub(crate) fn link_text(self, all: bool) -> &'static str {
        match (self, all) {
            (Bulk::Redrive, true) => "Redrive all dead letters...",
            (Bulk::Redrive, false) => "Redrive the dead letters this filter takes...",
            (Bulk::Purge, true) => "Delete all dead letters...",
            (Bulk::Purge, false) => "Delete the dead letters this filter takes...",
        }
    }

    fn count_id(self) -> &'static str {
        match self {
            Bulk::Redrive => "redrive-count",
            Bulk::Purge => "purge-count",
        }
    }

    fn verb(self) -> &'static str {
        match self {
            Bulk::Redrive => "puts back",
            Bulk::Purge => "deletes",
        }
    }
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

/// The confirmation text and form for `count` dead letters, those `query` takes.
fn confirm<O: Operator>(
    app: &App<O>,
    h: &mut Html,
    bulk: Bulk,
    queue: &str,
    query: &DeadQuery,
    count: u64,
) {
    h.raw("<p id=\"confirm\">This ")
        .raw(bulk.verb())
        .raw(" <strong id=\"")
        .raw(bulk.count_id())
        .raw("\">")
        .show(count)
        .raw("</strong> dead letters")
        .text(&query.words())
        .raw(" of queue ")
        .text(queue)
        .raw(match bulk {
            Bulk::Redrive => ", ready at once, their attempts reset.</p>",
            Bulk::Purge => " for good.</p>",
        });
    let mut fields = vec![("expected", count.to_string())];
    if let Some(r) = query.reason {
        fields.push(("reason", r.as_str().replace(' ', "-")));
    }
    if let Some(k) = &query.kind {
        fields.push(("kind", k.clone()));
    }
    let button = match bulk {
        Bulk::Redrive => format!("Redrive {count} dead letters"),
        Bulk::Purge => format!("Delete {count} dead letters"),
    };
    app.form(
        h,
        &app.queue_link(queue, &format!("/{}", bulk.name())),
        &fields,
        &button,
    );
}

/// GET: the confirmation, with the count.
async fn confirm_page<O: Operator>(
    bulk: Bulk,
    app: &App<O>,
    queue: &str,
    q: &HashMap<String, String>,
) -> Response {
    if !app.acts(bulk.able(app.op.capabilities())) {
        return app.message(StatusCode::FORBIDDEN, "this dashboard cannot do that here");
    }
    let query = match DeadQuery::parse(q) {
        Ok(query) => query,
        Err(e) => return app.message(StatusCode::BAD_REQUEST, &e),
    };
    let n = match count(app, queue, &query).await {
        Ok(n) => n,
        Err(e) => return app.error(&e),
    };
    let mut h = Html::new();
    h.raw(match bulk {
        Bulk::Redrive => "<h1>Redrive the dead letters of ",
        Bulk::Purge => "<h1>Delete the dead letters of ",
    })
    .text(queue)
    .raw("?</h1>");
    confirm(app, &mut h, bulk, queue, &query, n);
    app.page(StatusCode::OK, "Confirm", &h)
}

/// POST: the action, if the count is still the one confirmed.
async fn act<O: Operator>(
    bulk: Bulk,
    app: &App<O>,
    queue: &str,
    by: String,
    form: &HashMap<String, String>,
) -> Response {
    if let Some(refused) = app.refuse(form, bulk.able(app.op.capabilities())) {
        return refused;
    }
    let Some(expected) = form.get("expected").and_then(|s| s.parse::<u64>().ok()) else {
        return app.message(StatusCode::BAD_REQUEST, "no confirmed count");
    };
    let query = match DeadQuery::parse(form) {
        Ok(query) => query,
        Err(e) => return app.message(StatusCode::BAD_REQUEST, &e),
    };
    let now = match count(app, queue, &query).await {
        Ok(n) => n,
        Err(e) => return app.error(&e),
    };
    if now != expected {
        let mut h = Html::new();
        h.raw("<h1>The count changed</h1><p class=\"error\">Queue ")
            .text(queue)
            .raw(" now holds ")
            .show(now)
            .raw(" dead letters")
            .text(&query.words())
            .raw(", not the ")
            .show(expected)
            .raw(" confirmed: nothing was done.</p>");
        confirm(app, &mut h, bulk, queue, &query, now);
        return app.page(StatusCode::CONFLICT, "Confirm again", &h);
    }
    let done = match bulk {
        Bulk::Redrive => app.op.redrive_dead(queue, &query).await,
        Bulk::Purge => app.op.purge_dead(queue, &query).await,
    };
    let n = match done {
        Ok(n) => n,
        Err(e) => {
            tracing::info!(action = bulk.name(), queue = %queue, filter = %query.words(), by = %by, error = %e, "leaseq-web: action failed");
            return app.error(&e);
        }
    };
    tracing::info!(action = bulk.name(), queue = %queue, filter = %query.words(), confirmed = expected, done = n, by = %by, "leaseq-web: action");
    let mut h = Html::new();
    match bulk {
        Bulk::Redrive => {
            h.raw("<h1>Redriven</h1><p id=\"done\"><span id=\"redriven\">")
                .show(n)
                .raw("</span> of ")
                .show(expected)
                .raw(" dead letters of ")
                .text(queue)
                .raw(" are ready again (one that expired, or whose key a live item holds, stays; the queue's capacity stops it).</p>");
        }
        Bulk::Purge => {
            h.raw("<h1>Deleted</h1><p id=\"done\"><span id=\"deleted\">")
                .show(n)
                .raw("</span> dead letters of ")
                .text(queue)
                .raw(" deleted.</p>");
        }
    }
    h.raw("<p><a href=\"")
        .text(&app.queue_link(queue, ""))
        .raw("\">Queue ")
        .text(queue)
        .raw("</a></p>");
    app.page(StatusCode::OK, "Done", &h)
}

/// GET `/queues/{queue}/purge-dead`.
pub(crate) async fn purge_confirm<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path(queue): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    confirm_page(Bulk::Purge, &app, &queue, &q).await
}

/// POST `/queues/{queue}/purge-dead`.
pub(crate) async fn purge<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path(queue): Path<String>,
    by: Option<Extension<Who>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    act(Bulk::Purge, &app, &queue, who(by), &form).await
}

/// GET `/queues/{queue}/redrive-dead`.
pub(crate) async fn redrive_confirm<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path(queue): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    confirm_page(Bulk::Redrive, &app, &queue, &q).await
}

/// POST `/queues/{queue}/redrive-dead`.
pub(crate) async fn redrive<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path(queue): Path<String>,
    by: Option<Extension<Who>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    act(Bulk::Redrive, &app, &queue, who(by), &form).await
}
