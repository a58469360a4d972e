//! What every page shares: the document around a page's body, the error pages, the paging
//! parameters and the way times are shown.

use std::collections::HashMap;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use leaseq_async::Page;
use leaseq_core::MessageId;

use crate::html::{segment, Html};
use crate::operator::{Operator, OperatorError};

/// The dashboard's state: the operator it reads through and the path it is mounted at.
#[derive(Debug)]
pub(crate) struct App<O> {
    pub(crate) op: O,
    /// The path prefix of every link ("" at the root, "/admin" when nested there).
    pub(crate) base: String,
    /// The token every action's form carries (`None`: read-only mode, no action shown or
    /// taken).
    pub(crate) csrf: Option<String>,
    /// The pools of this process, if mounted in it with them.
    pub(crate) pools: crate::pools::Pools,
    /// The finished jobs per minute read so far, for the charts.
    pub(crate) charts: crate::throughput_cache::Charts,
}

impl<O: Operator> crate::throughput_cache::ChartSource for App<O> {
    type Op = O;
    fn op(&self) -> &O {
        &self.op
    }
    fn charts(&self) -> &crate::throughput_cache::Charts {
        &self.charts
    }
}

impl<O: Operator> App<O> {
    /// The link to `path` (which starts with `/`).
    pub(crate) fn link(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The link to the overview (the base itself when nested: axum's nested root).
    pub(crate) fn home(&self) -> String {
        if self.base.is_empty() {
            "/".to_string()
        } else {
            self.base.clone()
        }
    }

    /// The link to `queue`'s page, plus `rest`.
    pub(crate) fn queue_link(&self, queue: &str, rest: &str) -> String {
        format!("{}/queues/{}{rest}", self.base, segment(queue))
    }

    /// A whole page: `body` in the document, with the header.
    pub(crate) fn page(&self, status: StatusCode, title: &str, body: &Html) -> Response {
        let mut h = Html::new();
        h.raw("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>")
            .text(title)
            .raw(" - leaseq</title><link rel=\"stylesheet\" href=\"")
            .text(&self.link("/style.css"))
            .raw("\"></head><body><header><a href=\"")
            .text(&self.home())
            .raw("\">leaseq</a><span class=\"store\">")
            .text(self.op.store_kind())
            .raw(if self.acts_at_all() {
                "</span>"
            } else {
                " &middot; read-only</span>"
            })
            .raw("<a class=\"nav\" href=\"")
            .text(&self.link("/workers"))
            .raw("\">Workers</a></header><main>")
            .append(body)
            .raw("</main></body></html>");
        let mut response = (status, h.into_string()).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        response
    }

    /// The page for a failed call: 404 for an unknown queue, 403 for an action this
    /// operator cannot take, 409 for one the store refused (or another process must take),
    /// 503 for a store that could not be read or written (logged).
    pub(crate) fn error(&self, e: &OperatorError) -> Response {
        let status = match e {
            OperatorError::NoSuchQueue(_) => StatusCode::NOT_FOUND,
            OperatorError::ReadOnly => StatusCode::FORBIDDEN,
            OperatorError::Refused(_) | OperatorError::InUse => StatusCode::CONFLICT,
            _ => {
                tracing::warn!(error = %e, "leaseq-web: a store call failed");
                StatusCode::SERVICE_UNAVAILABLE
            }
        };
        self.message(status, &e.to_string())
    }

    /// A page with one message.
    pub(crate) fn message(&self, status: StatusCode, text: &str) -> Response {
        let mut h = Html::new();
        h.raw("<h1>")
            .show(status)
            .raw("</h1><p class=\"error\">")
            .text(text)
            .raw("</p><p><a href=\"")
            .text(&self.home())
            .raw("\">All queues</a></p>");
        self.page(status, status.as_str(), &h)
    }
}

/// The most entries a page shows.
pub(crate) const MAX_LIMIT: usize = 500;
/// Entries per page unless `limit` says.
pub(crate) const DEFAULT_LIMIT: usize = 50;

/// The page `after` and `limit` of a query name (`limit` within 1..=[`MAX_LIMIT`]); a
/// value that is not a number is refused with its name.
pub(crate) fn paging(q: &HashMap<String, String>) -> Result<Page, String> {
    let limit = match q.get("limit").filter(|s| !s.is_empty()) {
        None => DEFAULT_LIMIT,
        Some(s) => s
            .parse::<usize>()
            .map_err(|_| format!("limit {s:?} is not a number"))?
            .clamp(1, MAX_LIMIT),
    };
    let page = Page::first(limit);
    Ok(match q.get("after").filter(|s| !s.is_empty()) {
        None => page,
        Some(s) => page.next(MessageId::new(
            s.parse::<u64>()
                .map_err(|_| format!("after {s:?} is not an id"))?,
        )),
    })
}

/// The pager under a table: a link to the next page when this one is full (`extra`: more
/// query pairs the links keep, such as a filter's).
pub(crate) fn pager(
    h: &mut Html,
    link: &str,
    extra: &str,
    page: Page,
    shown: usize,
    last: Option<MessageId>,
) {
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!("&{extra}")
    };
    h.raw("<p class=\"pager\">");
    if page.after.is_some() {
        h.raw("<a href=\"")
            .text(&format!("{link}?limit={}{extra}", page.limit))
            .raw("\">First page</a> ");
    }
    if let (true, Some(last)) = (shown >= page.limit, last) {
        h.raw("<a rel=\"next\" href=\"")
            .text(&format!(
                "{link}?after={}&limit={}{extra}",
                last.get(),
                page.limit
            ))
            .raw("\">Next page</a>");
    }
    h.raw("</p>");
}

/// A time relative to `now` (the one way tools write it: [`leaseq_async::relative_time`]).
pub(crate) use leaseq_async::relative_time as relative;
