//! An item's payload as the dashboard shows it: a router job's kind, trace id and args
//! (formatted JSON), other bytes as text when they are printable UTF-8 and as a hex dump.
//! Everything goes through [`Html::text`]: a payload holding markup shows as text.

use leaseq_async::router::{args_of, kind_of, traceparent_of};

use crate::html::Html;

/// The most bytes the item page's hex dump shows.
const HEX_MAX: usize = 4096;

/// An item's job kind and its arguments, if it is a router envelope whose kind has no
/// space or control character (a plain text also begins with a "length" byte; its "kind"
/// then has spaces), as the CLI reads it.
pub(crate) fn split_kind(payload: &[u8]) -> (Option<&str>, &[u8]) {
    match (kind_of(payload), args_of(payload)) {
        (Some(kind), Some(args)) if !kind.chars().any(|c| c.is_whitespace() || c.is_control()) => {
            (Some(kind), args)
        }
        _ => (None, payload),
    }
}

/// Bytes in one line: compact JSON for JSON, quoted text for printable UTF-8, else `0x`
/// hex; cut at `max` characters with "...".
pub(crate) fn preview(bytes: &[u8], max: usize) -> String {
    let text = match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(v) if v.is_object() || v.is_array() => v.to_string(),
        _ => match std::str::from_utf8(bytes) {
            Ok(s) if s.chars().all(|c| !c.is_control()) => format!("{s:?}"),
            _ => format!("0x{}", hex(&bytes[..bytes.len().min(max)])),
        },
    };
    if text.chars().count() > max {
        text.chars().take(max).chain("...".chars()).collect()
    } else {
        text
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The payload section of the item page.
pub(crate) fn payload_section(h: &mut Html, payload: Option<&[u8]>, size: u64) {
    let Some(payload) = payload else {
        h.raw("<p class=\"muted\">The payload (")
            .show(size)
            .raw(" bytes) is larger than the store loads for a read.</p>");
        return;
    };
    let (kind, args) = split_kind(payload);
    if let Some(kind) = kind {
        h.raw("<h2>Job</h2><dl><dt>Kind</dt><dd id=\"job-kind\">")
            .text(kind)
            .raw("</dd>");
        if let Some(tp) = traceparent_of(payload) {
            h.raw("<dt>Trace</dt><dd><code>")
                .text(tp)
                .raw("</code></dd>");
        }
        h.raw("</dl><h3>Arguments</h3>");
        match serde_json::from_slice::<serde_json::Value>(args) {
            Ok(v) => {
                let pretty = serde_json::to_string_pretty(&v).unwrap_or_else(|_| v.to_string());
                h.raw("<pre class=\"json\" id=\"args\">")
                    .text(&pretty)
                    .raw("</pre>");
            }
            Err(_) => text_and_hex(h, args),
        }
        return;
    }
    text_and_hex(h, payload);
}

/// Bytes as text (UTF-8, invalid sequences replaced) and as a hex dump.
fn text_and_hex(h: &mut Html, bytes: &[u8]) {
    h.raw("<h2>Payload</h2><p class=\"muted\">")
        .show(bytes.len())
        .raw(" bytes")
        .raw(if std::str::from_utf8(bytes).is_ok() {
            ", UTF-8"
        } else {
            ", not UTF-8 (invalid sequences shown as \u{fffd})"
        })
        .raw("</p><h3>As text</h3><pre class=\"text\" id=\"payload-text\">")
        .text(&String::from_utf8_lossy(bytes))
        .raw("</pre><h3>Hex</h3><pre class=\"hex\">");
    for (n, line) in bytes[..bytes.len().min(HEX_MAX)].chunks(16).enumerate() {
        let mut row = format!("{:08x}  ", n * 16);
        for i in 0..16 {
            match line.get(i) {
                Some(b) => row.push_str(&format!("{b:02x} ")),
                None => row.push_str("   "),
            }
        }
        row.push(' ');
        row.extend(line.iter().map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                char::from(b)
            } else {
                '.'
            }
        }));
        row.push('\n');
        h.text(&row);
    }
    if bytes.len() > HEX_MAX {
        h.raw("... (")
            .show(bytes.len() - HEX_MAX)
            .raw(" bytes more)\n");
    }
    h.raw("</pre>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_router_job_shows_its_kind_and_formatted_args() {
        let mut h = Html::new();
        payload_section(&mut h, Some(b"\x05email{\"to\":\"<a@b>\"}"), 20);
        let s = h.into_string();
        assert!(s.contains("<dd id=\"job-kind\">email</dd>"), "{s}");
        assert!(
            s.contains("{\n  &quot;to&quot;: &quot;&lt;a@b&gt;&quot;\n}"),
            "{s}"
        );
    }

    #[test]
    fn other_bytes_show_as_escaped_text_and_hex() {
        let mut h = Html::new();
        payload_section(&mut h, Some(b"<script>x</script>\xff"), 19);
        let s = h.into_string();
        assert!(!s.contains("<script>"), "{s}");
        assert!(s.contains("&lt;script&gt;x&lt;/script&gt;\u{fffd}"), "{s}");
        assert!(s.contains("00000000  3c 73 63 72"), "{s}");
        assert!(s.contains("&lt;script&gt;x&lt;/scr"), "{s}");
    }

    #[test]
    fn previews_are_one_line_and_cut() {
        assert_eq!(preview(b"{\"a\": 1}", 40), "{\"a\":1}");
        assert_eq!(preview(b"hello", 40), "\"hello\"");
        assert_eq!(preview(&[0, 1, 255], 40), "0x0001ff");
        assert_eq!(preview(b"abcdefgh", 4), "\"abc...");
    }
}
