//! `/queues/{queue}/schedules`: the schedules the queue keeps in its store.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use leaseq_async::Timestamp;

use crate::html::Html;
use crate::layout::{relative, App};
use crate::operator::Operator;
use crate::pages::queue::{head, Tab};

/// A schedule's time (wall-clock nanoseconds) as a `SystemTime`.
fn time(t: Timestamp) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(t.as_nanos())
}

/// The schedules page.
pub(crate) async fn schedules<O: Operator>(
    State(app): State<Arc<App<O>>>,
    Path(queue): Path<String>,
) -> Response {
    let counts = match app.op.counts(&queue).await {
        Ok(c) => c,
        Err(e) => return app.error(&e),
    };
    let states = match app.op.schedules(&queue).await {
        Ok(s) => s,
        Err(e) => return app.error(&e),
    };
    let mut h = Html::new();
    head(&app, &mut h, &counts, Tab::Schedules);
    if states.is_empty() {
        h.raw("<p class=\"muted\" id=\"empty\">No schedules kept in this queue.</p>");
        return app.page(StatusCode::OK, &format!("{queue} schedules"), &h);
    }
    let now = SystemTime::now();
    let at =
        |t: Option<Timestamp>, none: &str| t.map_or(none.to_string(), |t| relative(time(t), now));
    h.raw("<table id=\"schedules\"><thead><tr><th>Schedule</th><th>Last tick</th><th>Next tick</th><th>Cursor moved</th><th>Calendar</th></tr></thead><tbody>");
    for s in &states {
        h.raw("<tr><td>")
            .text(&s.name)
            .raw("</td><td>")
            .text(&at(s.last_tick, "-"))
            .raw("</td><td>")
            .text(&at(s.next_tick, "never"))
            .raw("</td><td>")
            .text(&relative(time(s.moved_at), now))
            .raw("</td><td>")
            .text(s.calendar.as_deref().unwrap_or("-"))
            .raw("</td></tr>");
    }
    h.raw("</tbody></table>");
    app.page(StatusCode::OK, &format!("{queue} schedules"), &h)
}
