//! How the operator's queries ([`DeadQuery`]: which dead letters; [`LiveQuery`]: which
//! waiting items) are read from and written into a page's query string or form
//! ([`QueryForm`]).

use std::collections::HashMap;

pub use leaseq_async::operator::{DeadQuery, LiveQuery};
use leaseq_core::{MessageId, Reason};

use crate::html::segment;

/// A query as a page's parameters.
pub(crate) trait QueryForm: Sized {
    /// The query of a page's parameters (empty ones: none); a bad value is refused with
    /// its name.
    fn parse(q: &HashMap<String, String>) -> Result<Self, String>;

    /// The query string's pairs for it (each percent-encoded; empty when it takes all), to
    /// append after `?` or `&`: its [`fields`](Self::fields).
    fn to_query(&self) -> String {
        self.fields()
            .into_iter()
            .map(|(k, v)| format!("{k}={}", segment(&v)))
            .collect::<Vec<_>>()
            .join("&")
    }

    /// In words: "" for all, else " (reason nacked, kind email)".
    fn words(&self) -> String;

    /// The pairs of the hidden fields of a form that acts on it.
    fn fields(&self) -> Vec<(&'static str, String)>;
}

/// A parameter, unless empty.
fn param<'a>(q: &'a HashMap<String, String>, name: &str) -> Option<&'a String> {
    q.get(name).filter(|s| !s.is_empty())
}

/// `parts` in words: "" for none, else " (a, b)".
fn in_words(parts: Vec<String>) -> String {
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

impl QueryForm for DeadQuery {
    fn parse(q: &HashMap<String, String>) -> Result<DeadQuery, String> {
        let mut query = DeadQuery::all();
        if let Some(r) = param(q, "reason") {
            let want = r.replace('-', " ");
            query.reason = Some(
                Reason::ALL
                    .iter()
                    .copied()
                    .find(|x| x.as_str() == want)
                    .ok_or_else(|| format!("no reason {r:?}"))?,
            );
        }
        query.kind = param(q, "kind").cloned();
        Ok(query)
    }

    fn words(&self) -> String {
        let mut parts = Vec::new();
        if let Some(r) = self.reason {
            parts.push(format!("reason {}", r.as_str()));
        }
        if let Some(k) = &self.kind {
            parts.push(format!("kind {k}"));
        }
        in_words(parts)
    }

    fn fields(&self) -> Vec<(&'static str, String)> {
        let mut fields = Vec::new();
        if let Some(r) = self.reason {
            fields.push(("reason", r.as_str().replace(' ', "-")));
        }
        if let Some(k) = &self.kind {
            fields.push(("kind", k.clone()));
        }
        fields
    }
}

impl QueryForm for LiveQuery {
    fn parse(q: &HashMap<String, String>) -> Result<LiveQuery, String> {
        let id = |name: &str| -> Result<Option<MessageId>, String> {
            param(q, name)
                .map(|s| {
                    s.trim()
                        .parse::<u64>()
                        .map(MessageId::new)
                        .map_err(|_| format!("{name} {s:?} is not an id"))
                })
                .transpose()
        };
        let mut query = LiveQuery::all();
        query.kind = param(q, "kind").cloned();
        query.min_id = id("min_id")?;
        query.max_id = id("max_id")?;
        Ok(query)
    }

    fn words(&self) -> String {
        let mut parts = Vec::new();
        if let Some(k) = &self.kind {
            parts.push(format!("kind {k}"));
        }
        match (self.min_id, self.max_id) {
            (Some(a), Some(b)) => parts.push(format!("ids {} to {}", a.get(), b.get())),
            (Some(a), None) => parts.push(format!("ids from {}", a.get())),
            (None, Some(b)) => parts.push(format!("ids up to {}", b.get())),
            (None, None) => {}
        }
        in_words(parts)
    }

    fn fields(&self) -> Vec<(&'static str, String)> {
        let mut fields = Vec::new();
        if let Some(k) = &self.kind {
            fields.push(("kind", k.clone()));
        }
        if let Some(a) = self.min_id {
            fields.push(("min_id", a.get().to_string()));
        }
        if let Some(b) = self.max_id {
            fields.push(("max_id", b.get().to_string()));
        }
        fields
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(p: &[(&str, &str)]) -> HashMap<String, String> {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_query_goes_to_a_query_string_and_back() {
        let q = DeadQuery::all().reason(Reason::LeaseExpired).kind("a b&c");
        assert_eq!(q.to_query(), "reason=lease-expired&kind=a%20b%26c");
        let back = pairs(&[("reason", "lease-expired"), ("kind", "a b&c")]);
        assert_eq!(DeadQuery::parse(&back), Ok(q));
        assert!(DeadQuery::parse(&pairs(&[("reason", "nope")])).is_err());
        assert!(DeadQuery::parse(&HashMap::new()).unwrap().is_all());
    }

    #[test]
    fn a_live_query_goes_to_a_query_string_and_back() {
        let q = LiveQuery::all()
            .kind("email")
            .ids(MessageId::new(3), MessageId::new(9));
        assert_eq!(q.to_query(), "kind=email&min_id=3&max_id=9");
        assert_eq!(q.words(), " (kind email, ids 3 to 9)");
        let back = pairs(&[("kind", "email"), ("min_id", "3"), ("max_id", "9")]);
        assert_eq!(LiveQuery::parse(&back), Ok(q));
        assert_eq!(
            LiveQuery::parse(&pairs(&[("min_id", "x")])),
            Err("min_id \"x\" is not an id".into())
        );
        assert!(LiveQuery::parse(&pairs(&[("min_id", "")]))
            .unwrap()
            .is_all());
    }
}
