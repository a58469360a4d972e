//! HTML built so that nothing read from a store can become markup: [`Html::text`] escapes
//! every character HTML gives a meaning to, and markup goes in only as `&'static str`
//! ([`Html::raw`]), written in this crate's source.

use std::fmt::Display;

/// An HTML fragment under construction.
#[derive(Debug, Default)]
pub(crate) struct Html(String);

impl Html {
    /// An empty fragment.
    pub(crate) fn new() -> Html {
        Html(String::with_capacity(4096))
    }

    /// Markup written in this crate (a `'static` string: never a store's bytes).
    pub(crate) fn raw(&mut self, markup: &'static str) -> &mut Html {
        self.0.push_str(markup);
        self
    }

    /// Text, escaped: in element content and in quoted attribute values alike.
    pub(crate) fn text(&mut self, text: &str) -> &mut Html {
        escape_into(&mut self.0, text);
        self
    }

    /// A value's `Display`, escaped.
    pub(crate) fn show(&mut self, value: impl Display) -> &mut Html {
        self.text(&value.to_string())
    }

    /// Another fragment, already safe.
    pub(crate) fn append(&mut self, other: &Html) -> &mut Html {
        self.0.push_str(&other.0);
        self
    }

    /// The markup.
    pub(crate) fn into_string(self) -> String {
        self.0
    }
}

/// `text` with `&`, `<`, `>`, `"` and `'` as character references.
pub(crate) fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

/// A path segment percent-encoded: every byte but ASCII letters, digits and `-._~`.
pub(crate) fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_raw_is_not() {
        let mut h = Html::new();
        h.raw("<p>")
            .text("<script>alert('x')</script> & \"q\"")
            .raw("</p>");
        assert_eq!(
            h.into_string(),
            "<p>&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;</p>"
        );
    }

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(segment("jobs-1.a_b~"), "jobs-1.a_b~");
        assert_eq!(segment("a b/c?\"<é"), "a%20b%2Fc%3F%22%3C%C3%A9");
    }
}
