//! `/queues/{queue}/items/{id}`: one item, live or dead: its state, attempts, times, last
//! error and payload (a router job's args as formatted JSON, other bytes as text and hex).

use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use leaseq_core::MessageId;

use crate::html::Html;
use crate::layout::{relative, App};
use crate::operator::Operator;
use crate::payload::payload_section;

/// The item page.
pub(crate) async fn item<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path((queue, id)): Path<(String, String)>,
) -> Response {
    let Ok(id) = id.parse::<u64>() else {
        return app.message(
            StatusCode::BAD_REQUEST,
            &format!("{id:?} is not an item id"),
        );
    };
    let item = match app.op.item(&queue, MessageId::new(id)).await {
        Ok(Some(item)) => item,
        Ok(None) => {
            return app.message(
                StatusCode::NOT_FOUND,
                &format!("no item {id} in queue {queue:?} (acknowledged, purged or never there)"),
            )
        }
        Err(e) => return app.error(&e),
    };
    let now = SystemTime::now();
    let at = |t: Option<SystemTime>| t.map(|t| relative(t, now));
    let mut h = Html::new();
    h.raw("<p><a href=\"")
        .text(&app.queue_link(&queue, ""))
        .raw("\">&larr; Queue ")
        .text(&queue)
        .raw("</a></p><h1>Item ")
        .show(id)
        .raw("</h1><dl id=\"item\">");
    let key = item
        .key
        .as_deref()
        .map(|k| String::from_utf8_lossy(k).into_owned());
    let rows: [(&str, Option<String>); 10] = [
        ("State", Some(item.state.as_str().to_string())),
        ("Attempts", Some(item.attempts.to_string())),
        ("Priority", Some(item.priority.to_string())),
        ("Size", Some(format!("{} bytes", item.size))),
        ("Key", key),
        ("Visible", at(item.visible_at)),
        ("Lease deadline", at(item.deadline)),
        ("Expires", at(item.expires_at)),
        (
            "Dead-letter reason",
            item.reason.map(|r| r.as_str().to_string()),
        ),
        ("Dead since", at(item.dead_at)),
    ];
    for (label, value) in rows {
        if let Some(value) = value {
            h.raw("<dt>")
                .text(label)
                .raw("</dt><dd>")
                .text(&value)
                .raw("</dd>");
        }
    }
    h.raw("</dl>");
    if item.state == leaseq_async::StoredState::Dead && app.acts(app.op.capabilities().redrive) {
        app.form(
            &mut h,
            &app.queue_link(&queue, &format!("/items/{id}/redrive")),
            &[],
            "Redrive: back in the queue, attempts reset",
        );
    }
    if let Some(error) = &item.last_error {
        h.raw("<h2>Last error</h2><pre class=\"text\" id=\"last-error\">")
            .text(error)
            .raw("</pre>");
    }
    payload_section(&mut h, item.payload.as_deref(), item.size);
    app.page(StatusCode::OK, &format!("{queue} item {id}"), &h)
}
