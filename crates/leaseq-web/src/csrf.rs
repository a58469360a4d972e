//! Actions' guard: each action is a POST whose form carries the dashboard's CSRF token (a
//! secret drawn from the OS at start, in every form the dashboard renders; another site
//! cannot read it, so it cannot forge the POST), refused in read-only mode and where the
//! operator cannot do the action. Forms are drawn here too.

use std::collections::HashMap;

use axum::http::StatusCode;
use axum::response::Response;

use crate::html::Html;
use crate::layout::App;
use crate::operator::Operator;

/// A new token: 32 random bytes from the OS, as hex (`None` when the OS gives none).
pub(crate) fn new_token() -> Option<String> {
    let mut bytes = [0u8; 32];
    match getrandom::getrandom(&mut bytes) {
        Ok(()) => Some(bytes.iter().map(|b| format!("{b:02x}")).collect()),
        Err(e) => {
            tracing::warn!(error = %e, "leaseq-web: no random CSRF token: actions off (read-only)");
            None
        }
    }
}

/// Equal bytes, in a time that depends on the lengths only.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl<O: Operator> App<O> {
    /// Whether actions are shown (not read-only) and `able` (the operator's capability).
    pub(crate) fn acts(&self, able: bool) -> bool {
        able && self.csrf.is_some()
    }

    /// Whether any action is shown (not read-only, and the operator can do one).
    pub(crate) fn acts_at_all(&self) -> bool {
        let c = self.op.capabilities();
        self.acts(c.redrive || c.purge || c.pause || c.cancel)
    }

    /// Refuses a POST in read-only mode, for an action the operator cannot do, or whose
    /// form has no token or another one: the refusal (403, logged), or `None` to go on.
    pub(crate) fn refuse(&self, form: &HashMap<String, String>, able: bool) -> Option<Response> {
        let Some(token) = &self.csrf else {
            return Some(self.message(StatusCode::FORBIDDEN, "this dashboard is read-only"));
        };
        if !able {
            return Some(self.message(
                StatusCode::FORBIDDEN,
                "this store cannot do that from the dashboard",
            ));
        }
        let given = form.get("csrf").map(String::as_bytes).unwrap_or_default();
        if !same(given, token.as_bytes()) {
            tracing::warn!("leaseq-web: a POST without the right CSRF token refused");
            return Some(self.message(
                StatusCode::FORBIDDEN,
                "the form's CSRF token is missing or stale: reload the page and try again",
            ));
        }
        None
    }

    /// A form that POSTs to `action` with the token, `fields` hidden, and one button.
    pub(crate) fn form(&self, h: &mut Html, action: &str, fields: &[(&str, String)], button: &str) {
        let Some(token) = &self.csrf else {
            return;
        };
        h.raw("<form method=\"post\" class=\"action\" action=\"")
            .text(action)
            .raw("\"><input type=\"hidden\" name=\"csrf\" value=\"")
            .text(token)
            .raw("\">");
        for (name, value) in fields {
            h.raw("<input type=\"hidden\" name=\"")
                .text(name)
                .raw("\" value=\"")
                .text(value)
                .raw("\">");
        }
        h.raw("<button type=\"submit\">")
            .text(button)
            .raw("</button></form>");
    }
}
