//! Access to the dashboard: a bearer token or HTTP basic credentials, checked on every
//! request, and the response headers every page gets (no script, no framing, no sniffing).

use std::fmt;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;

/// The credentials a request must carry. Required on any address but loopback (see
/// [`Dashboard::serve`](crate::Dashboard::serve)); an embedding app may use its own
/// middleware instead.
#[derive(Clone)]
pub enum Auth {
    /// `Authorization: Bearer <token>`.
    Bearer(String),
    /// `Authorization: Basic ...` with this user and password (a browser asks for them).
    Basic {
        /// The user name.
        user: String,
        /// The password.
        password: String,
    },
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the secret, in logs or panics.
        match self {
            Auth::Bearer(_) => f.write_str("Auth::Bearer(..)"),
            Auth::Basic { user, .. } => write!(f, "Auth::Basic {{ user: {user:?}, .. }}"),
        }
    }
}

impl Auth {
    /// Whether the `Authorization` header `value` carries these credentials.
    pub(crate) fn admits(&self, value: &[u8]) -> bool {
        match self {
            Auth::Bearer(token) => value
                .strip_prefix(b"Bearer ")
                .is_some_and(|given| same(given, token.as_bytes())),
            Auth::Basic { user, password } => {
                let Some(given) = value.strip_prefix(b"Basic ") else {
                    return false;
                };
                let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(given) else {
                    return false;
                };
                let mut want = user.as_bytes().to_vec();
                want.push(b':');
                want.extend_from_slice(password.as_bytes());
                same(&decoded, &want)
            }
        }
    }

    fn challenge(&self) -> &'static str {
        match self {
            Auth::Bearer(_) => "Bearer realm=\"leaseq\"",
            Auth::Basic { .. } => "Basic realm=\"leaseq\", charset=\"UTF-8\"",
        }
    }
}

/// Who made a request, as the dashboard's own [`Auth`] knows it (for the action log).
#[derive(Debug, Clone)]
pub(crate) struct Who(pub(crate) String);

/// Equal bytes, in a time that depends on the lengths only.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Refuses a request without the credentials (401 with the challenge).
pub(crate) async fn require(State(auth): State<Arc<Auth>>, req: Request, next: Next) -> Response {
    let ok = req
        .headers()
        .get(header::AUTHORIZATION)
        .is_some_and(|v| auth.admits(v.as_bytes()));
    if ok {
        let who = match &*auth {
            Auth::Bearer(_) => "the bearer token's holder".to_string(),
            Auth::Basic { user, .. } => format!("user {user:?}"),
        };
        let mut req = req;
        req.extensions_mut().insert(Who(who));
        return next.run(req).await;
    }
    tracing::info!(path = %req.uri().path(), "leaseq-web: a request without valid credentials refused");
    let mut response = (StatusCode::UNAUTHORIZED, "credentials required\n").into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(auth.challenge()),
    );
    response
}

/// Refuses a request whose `Host` is not a loopback name (`localhost`, `127.0.0.1`,
/// `[::1]`, any port): a dashboard served on loopback without credentials must not answer
/// a page of another site whose name was made to resolve to 127.0.0.1 (DNS rebinding),
/// which could read it, its CSRF token included.
pub(crate) async fn loopback_host(req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok());
    if host.is_some_and(is_loopback_host) {
        return next.run(req).await;
    }
    tracing::info!(host = ?host, "leaseq-web: a request for another host name refused");
    (
        StatusCode::MISDIRECTED_REQUEST,
        "this dashboard answers to localhost, 127.0.0.1 and [::1] only\n",
    )
        .into_response()
}

/// Whether `host` (a `Host` header: a name or address, maybe a port) is loopback.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The headers of every response: no script runs (the pages have none; a payload's markup
/// is escaped, and this forbids it besides), no other site frames the pages, no content-type
/// guessing, no referrer leaves.
pub(crate) async fn secure_headers(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_host_names_pass() {
        for ok in [
            "localhost",
            "localhost:8080",
            "LOCALHOST:1",
            "127.0.0.1",
            "127.0.0.1:80",
            "127.1.2.3:9",
            "[::1]:8080",
            "[::1]",
        ] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8080",
            "localhost.evil.example",
            "10.0.0.1:80",
            "[::2]:80",
            "",
            "127.0.0.1.evil.example",
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn credentials_are_checked_whole() {
        let bearer = Auth::Bearer("s3cret".into());
        assert!(bearer.admits(b"Bearer s3cret"));
        assert!(!bearer.admits(b"Bearer s3cre"));
        assert!(!bearer.admits(b"Bearer s3cretX"));
        assert!(!bearer.admits(b"s3cret"));
        let basic = Auth::Basic {
            user: "ops".into(),
            password: "pw".into(),
        };
        // "ops:pw"
        assert!(basic.admits(b"Basic b3BzOnB3"));
        assert!(!basic.admits(b"Basic b3BzOnB4"));
        assert!(!basic.admits(b"Basic !!"));
        assert!(!format!("{bearer:?}{basic:?}").contains("s3cret"));
        assert!(!format!("{basic:?}").contains("pw"));
    }
}
