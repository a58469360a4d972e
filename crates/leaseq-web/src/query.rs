//! [`DeadQuery`]: which dead letters a list or a bulk action takes (a reason, a job kind),
//! and how it is read from and written into a page's query string.

use std::collections::HashMap;

use leaseq_async::DeadFilter;
use leaseq_core::Reason;

use crate::html::segment;

/// Which dead letters a list or a bulk action takes: all by default, or those of one
/// [`Reason`], or one job kind (a router envelope's), or both.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeadQuery {
    /// Only those dead-lettered for this reason.
    pub reason: Option<Reason>,
    /// Only those whose item is a job of this kind.
    pub kind: Option<String>,
}

impl DeadQuery {
    /// Every dead letter.
    pub fn all() -> DeadQuery {
        DeadQuery::default()
    }

    /// Only those dead-lettered for `reason`.
    #[must_use]
    pub fn reason(mut self, reason: Reason) -> DeadQuery {
        self.reason = Some(reason);
        self
    }

    /// Only those whose item is a job of kind `kind`.
    #[must_use]
    pub fn kind(mut self, kind: impl Into<String>) -> DeadQuery {
        self.kind = Some(kind.into());
        self
    }

    /// Whether it takes every dead letter.
    pub fn is_all(&self) -> bool {
        self.reason.is_none() && self.kind.is_none()
    }

    /// The stores' filter for it.
    pub fn filter(&self) -> DeadFilter<Vec<u8>> {
        let mut f = DeadFilter::all();
        if let Some(r) = self.reason {
            f = f.reason(r);
        }
        if let Some(k) = &self.kind {
            f = f.kind(k);
        }
        f
    }

    /// The query of a page's `reason` and `kind` parameters (empty ones: none); an unknown
    /// reason is refused with its name.
    pub(crate) fn parse(q: &HashMap<String, String>) -> Result<DeadQuery, String> {
        let mut query = DeadQuery::all();
        if let Some(r) = q.get("reason").filter(|s| !s.is_empty()) {
            let want = r.replace('-', " ");
            query.reason = Some(
                Reason::ALL
                    .iter()
                    .copied()
                    .find(|x| x.as_str() == want)
                    .ok_or_else(|| format!("no reason {r:?}"))?,
            );
        }
        query.kind = q.get("kind").filter(|s| !s.is_empty()).cloned();
        Ok(query)
    }

    /// The query string's pairs for it (`reason=..&kind=..`, each percent-encoded; empty
    /// for every dead letter), to append after `?` or `&`.
    pub(crate) fn to_query(&self) -> String {
        let mut parts = Vec::new();
        if let Some(r) = self.reason {
            parts.push(format!("reason={}", r.as_str().replace(' ', "-")));
        }
        if let Some(k) = &self.kind {
            parts.push(format!("kind={}", segment(k)));
        }
        parts.join("&")
    }

    /// In words: "" for all, else " (reason nacked, kind email)".
    pub(crate) fn words(&self) -> String {
        let mut parts = Vec::new();
        if let Some(r) = self.reason {
            parts.push(format!("reason {}", r.as_str()));
        }
        if let Some(k) = &self.kind {
            parts.push(format!("kind {k}"));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_goes_to_a_query_string_and_back() {
        let q = DeadQuery::all().reason(Reason::LeaseExpired).kind("a b&c");
        assert_eq!(q.to_query(), "reason=lease-expired&kind=a%20b%26c");
        let pairs: HashMap<String, String> = [
            ("reason".to_string(), "lease-expired".to_string()),
            ("kind".to_string(), "a b&c".to_string()),
        ]
        .into();
        assert_eq!(DeadQuery::parse(&pairs), Ok(q));
        let bad: HashMap<String, String> = [("reason".to_string(), "nope".to_string())].into();
        assert!(DeadQuery::parse(&bad).is_err());
        assert!(DeadQuery::parse(&HashMap::new()).unwrap().is_all());
    }
}
