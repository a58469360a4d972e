//! The TLS parameters of a connection string, read before `tokio-postgres` sees it.
//!
//! `tokio-postgres`'s own parser knows `sslmode` as `disable`, `prefer` and `require` only,
//! refuses `verify-ca` and `verify-full`, and refuses `sslrootcert`, `sslcert` and `sslkey`
//! as unknown options. So [`split`] takes those four out of the string (key/value or
//! `postgresql://` URL form, libpq's quoting and percent-encoding), hands back the rest
//! untouched for `tokio-postgres` to parse, and the TLS settings for [`crate::tls`].
//!
//! No error of this file quotes a value of the string: a password stays out of messages.

use std::fmt;

/// libpq's `sslmode`, all five that a connection string may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SslMode {
    /// No TLS.
    Disable,
    /// TLS if the server offers it (libpq's default, and this store's).
    Prefer,
    /// TLS or nothing; the certificate is not checked (unless `sslrootcert` is given: then
    /// as `VerifyCa`, as libpq does).
    Require,
    /// TLS, the certificate chain checked against the trusted roots; the host name not.
    VerifyCa,
    /// TLS, the chain and the host name checked.
    VerifyFull,
}

/// What the connection string says about TLS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TlsParams {
    /// `sslmode`; `prefer` when absent.
    pub(crate) mode: SslMode,
    /// `sslrootcert`: a PEM file of trusted roots, or `system` for the platform's store.
    pub(crate) root_cert: Option<String>,
    /// `sslcert`: the client certificate (PEM, chain allowed).
    pub(crate) cert: Option<String>,
    /// `sslkey`: the client certificate's private key (PEM).
    pub(crate) key: Option<String>,
}

impl Default for TlsParams {
    fn default() -> Self {
        TlsParams {
            mode: SslMode::Prefer,
            root_cert: None,
            cert: None,
            key: None,
        }
    }
}

/// A connection string that could not be read. Never quotes a value (it may be a password).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ConnInfoError(pub(crate) &'static str);

impl fmt::Display for ConnInfoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// Splits `url` into the string `tokio-postgres` parses (the TLS keys removed; `sslmode`
/// given back as `disable`, `prefer` or `require`, the verify modes as `require`) and the
/// TLS parameters.
pub(crate) fn split(url: &str) -> Result<(String, TlsParams), ConnInfoError> {
    let mut params = TlsParams::default();
    let rest = if let Some(body) = ["postgresql://", "postgres://"]
        .iter()
        .find_map(|p| url.strip_prefix(p))
    {
        let prefix = &url[..url.len() - body.len()];
        match body.split_once('?') {
            None => url.to_string(),
            Some((head, query)) => {
                let mut kept = Vec::new();
                for pair in query.split('&').filter(|p| !p.is_empty()) {
                    let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                    if !take(&mut params, &percent_decode(k)?, percent_decode(v)?)? {
                        kept.push(pair);
                    }
                }
                let mut out = format!("{prefix}{head}");
                if let Some(mode) = base_mode(&params) {
                    kept.push(mode);
                }
                if !kept.is_empty() {
                    out.push('?');
                    out.push_str(&kept.join("&"));
                }
                out
            }
        }
    } else {
        let mut kept = Vec::new();
        for (key, value, text) in key_values(url)? {
            if !take(&mut params, key, value)? {
                kept.push(text);
            }
        }
        if let Some(mode) = base_mode(&params) {
            kept.push(mode);
        }
        kept.join(" ")
    };
    Ok((rest, params))
}

/// The `sslmode` handed to `tokio-postgres` (which only tells TLS from none): `None` when
/// the string named none (its default is `prefer`, as ours).
fn base_mode(params: &TlsParams) -> Option<&'static str> {
    match params.mode {
        SslMode::Disable => Some("sslmode=disable"),
        SslMode::Prefer => None,
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => Some("sslmode=require"),
    }
}

/// Records `key` if it is one of the TLS keys (true), else leaves it to `tokio-postgres`.
fn take(params: &mut TlsParams, key: &str, value: String) -> Result<bool, ConnInfoError> {
    match key {
        "sslmode" => {
            params.mode = match value.as_str() {
                "disable" => SslMode::Disable,
                "prefer" => SslMode::Prefer,
                "require" => SslMode::Require,
                "verify-ca" => SslMode::VerifyCa,
                "verify-full" => SslMode::VerifyFull,
                // libpq's `allow` tries without TLS first: this store does not offer it.
                _ => {
                    return Err(ConnInfoError(
                        "invalid sslmode (disable, prefer, require, verify-ca or verify-full)",
                    ))
                }
            }
        }
        "sslrootcert" => params.root_cert = Some(value),
        "sslcert" => params.cert = Some(value),
        "sslkey" => params.key = Some(value),
        _ => return Ok(false),
    }
    Ok(true)
}

/// The `key = value` pairs of a libpq key/value string, each with its original text (kept
/// as written for `tokio-postgres`). The same grammar as libpq's: values quoted with `'`,
/// `\` escaping the next character.
fn key_values(s: &str) -> Result<Vec<(&str, String, &str)>, ConnInfoError> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let skip_ws = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        i = skip_ws(i);
        if i == bytes.len() {
            return Ok(out);
        }
        let start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'=' {
            i += 1;
        }
        let key = &s[start..i];
        i = skip_ws(i);
        if bytes.get(i) != Some(&b'=') {
            return Err(ConnInfoError("expected `=` after a keyword"));
        }
        i = skip_ws(i + 1);
        let mut value = Vec::new();
        if bytes.get(i) == Some(&b'\'') {
            i += 1;
            loop {
                match bytes.get(i) {
                    None => return Err(ConnInfoError("unterminated quoted value")),
                    Some(b'\'') => break,
                    Some(b'\\') if i + 1 < bytes.len() => {
                        value.push(bytes[i + 1]);
                        i += 2;
                    }
                    Some(&b) => {
                        value.push(b);
                        i += 1;
                    }
                }
            }
            i += 1;
        } else {
            while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                if bytes[i] == b'\\' && i + 1 < bytes.len() {
                    i += 1;
                }
                value.push(bytes[i]);
                i += 1;
            }
        }
        let value =
            String::from_utf8(value).map_err(|_| ConnInfoError("a value is not valid UTF-8"))?;
        out.push((key, value, &s[start..i]));
    }
}

/// `%XX` decoding of a URL's query part.
fn percent_decode(s: &str) -> Result<String, ConnInfoError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or(ConnInfoError("bad percent-encoding in the URL"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| ConnInfoError("a URL parameter is not valid UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_value_strings_lose_only_the_tls_keys() {
        let (rest, p) = split(
            "host=db.example.com sslmode=verify-full password='a b\\'c' \
             sslrootcert=/etc/ca.pem sslcert = c.pem sslkey=k.pem user=app",
        )
        .unwrap();
        assert_eq!(
            rest,
            "host=db.example.com password='a b\\'c' user=app sslmode=require"
        );
        assert_eq!(p.mode, SslMode::VerifyFull);
        assert_eq!(p.root_cert.as_deref(), Some("/etc/ca.pem"));
        assert_eq!(p.cert.as_deref(), Some("c.pem"));
        assert_eq!(p.key.as_deref(), Some("k.pem"));
        rest.parse::<tokio_postgres::Config>().unwrap();
    }

    #[test]
    fn urls_lose_only_the_tls_keys() {
        let (rest, p) =
            split("postgresql://u:p%40ss@h:5432/db?sslmode=verify-ca&sslrootcert=%2Ftmp%2Fca.pem&application_name=x")
                .unwrap();
        assert_eq!(
            rest,
            "postgresql://u:p%40ss@h:5432/db?application_name=x&sslmode=require"
        );
        assert_eq!(p.mode, SslMode::VerifyCa);
        assert_eq!(p.root_cert.as_deref(), Some("/tmp/ca.pem"));
        let (rest, p) = split("postgres://h/db?sslmode=disable").unwrap();
        assert_eq!(rest, "postgres://h/db?sslmode=disable");
        assert_eq!(p.mode, SslMode::Disable);
        let (rest, p) = split("postgres://h/db").unwrap();
        assert_eq!(
            (rest.as_str(), p),
            ("postgres://h/db", TlsParams::default())
        );
    }

    #[test]
    fn no_sslmode_is_prefer_and_unchanged() {
        let url = "host=127.0.0.1 port=5432 user=postgres dbname=test";
        assert_eq!(split(url).unwrap(), (url.to_string(), TlsParams::default()));
    }

    #[test]
    fn errors_never_quote_values() {
        for bad in [
            "password='secret",
            "password=secret sslmode=verify-everything",
            "host=h password secret",
            "postgres://h/db?password=secret%zz",
        ] {
            let e = split(bad).unwrap_err().to_string();
            assert!(!e.contains("secret") && !e.contains("everything"), "{e}");
        }
    }
}
