//! How the CLI shows what it read: a payload as text when printable, else hex, with its job
//! kind when it is a router envelope; tables for people and JSON (`--json`) for programs.

use std::time::{SystemTime, UNIX_EPOCH};

use leaseq_async::router::{args_of, kind_of, traceparent_of};
use leaseq_async::{StoredCounts, StoredItem};
use serde_json::{json, Value};

/// The most payload bytes a table shows.
const PREVIEW: usize = 48;

/// An item's job kind and its arguments (the JSON after the kind and any trace block), if
/// it is an envelope. Shown as one only when the kind has no space or control character: a
/// long plain text also begins with a "length" byte (its first letter), and its "kind"
/// then has spaces.
fn split_kind(payload: &[u8]) -> (Option<&str>, &[u8]) {
    match (kind_of(payload), args_of(payload)) {
        (Some(kind), Some(args)) if !kind.chars().any(|c| c.is_whitespace() || c.is_control()) => {
            (Some(kind), args)
        }
        _ => (None, payload),
    }
}

/// A job's arguments as JSON, when they parse as JSON (a router job's always do).
fn args_json(args: &[u8]) -> Option<Value> {
    serde_json::from_slice(args).ok()
}

/// The arguments of an envelope as one line of compact JSON, cut at `max` characters with
/// "..."; other bytes as [`preview`] shows them.
fn args_preview(args: &[u8], max: usize) -> String {
    let Some(value) = args_json(args) else {
        return preview(args, max);
    };
    // (Compact JSON escapes every control character: one line.)
    let text = value.to_string();
    if text.chars().count() > max {
        text.chars().take(max).chain("...".chars()).collect()
    } else {
        text
    }
}

/// Bytes as text when they are printable UTF-8 (quoted), else as `0x` hex; cut at
/// `max` bytes with "...".
pub(crate) fn preview(bytes: &[u8], max: usize) -> String {
    let shown = &bytes[..bytes.len().min(max)];
    let more = if bytes.len() > max { "..." } else { "" };
    match std::str::from_utf8(shown) {
        // Text only when every character shows as itself (no control character, no
        // combining mark or other character `Debug` would escape).
        Ok(s)
            if s.chars()
                .all(|c| matches!(c, '"' | '\\') || c.escape_debug().count() == 1) =>
        {
            format!("{s:?}{more}")
        }
        _ => format!("0x{}{more}", hex(shown)),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Milliseconds since the Unix epoch.
pub(crate) fn unix_ms(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

/// A time relative to `now` (the one way tools write it: [`leaseq_async::relative_time`]).
pub(crate) use leaseq_async::relative_time as relative;

/// Counts as JSON.
pub(crate) fn counts_json(c: &StoredCounts) -> Value {
    json!({
        "queue": c.queue,
        "ready": c.ready,
        "delayed": c.delayed,
        "in_flight": c.in_flight,
        "dead": c.dead,
        "live": c.live(),
        "paused": c.paused,
    })
}

/// Counts as a table, one row each.
pub(crate) fn counts_table(counts: &[StoredCounts]) -> String {
    let width = counts
        .iter()
        .map(|c| c.queue.len())
        .max()
        .unwrap_or(0)
        .max(5);
    let mut out = format!(
        "{:<width$}  {:>10}  {:>10}  {:>10}  {:>10}  {:>6}\n",
        "queue", "ready", "delayed", "in flight", "dead", "paused"
    );
    for c in counts {
        let paused = if c.paused { "yes" } else { "no" };
        out.push_str(&format!(
            "{:<width$}  {:>10}  {:>10}  {:>10}  {:>10}  {:>6}\n",
            c.queue, c.ready, c.delayed, c.in_flight, c.dead, paused
        ));
    }
    out
}

/// An item as JSON: its payload as text (`null` unless UTF-8) and as hex, its kind, args
/// and W3C `traceparent` when it is a router envelope (one pushed inside a traced span).
/// The args are the job's JSON itself (an object for a router job), or their text when
/// they are not JSON.
pub(crate) fn item_json(item: &StoredItem) -> Value {
    let payload = item.payload.as_deref();
    let (kind, args) = payload.map_or((None, &[][..]), split_kind);
    let args = payload.and_then(|_| {
        kind.and_then(|_| args_json(args))
            .or_else(|| std::str::from_utf8(args).ok().map(Value::from))
    });
    json!({
        "id": item.id.get(),
        "state": item.state.as_str(),
        "attempts": item.attempts,
        "priority": item.priority,
        "key": item.key.as_deref().map(String::from_utf8_lossy),
        "kind": kind,
        "args": args,
        "traceparent": kind.and(payload).and_then(traceparent_of),
        "payload": payload.and_then(|p| std::str::from_utf8(p).ok()),
        "payload_hex": payload.map(hex),
        "size": item.size,
        "visible_at_ms": item.visible_at.map(unix_ms),
        "deadline_ms": item.deadline.map(unix_ms),
        "expires_at_ms": item.expires_at.map(unix_ms),
        "reason": item.reason.map(|r| r.as_str()),
        "last_error": item.last_error,
        "dead_at_ms": item.dead_at.map(unix_ms),
    })
}

/// Items as JSON, an array.
pub(crate) fn items_json(items: &[StoredItem]) -> Value {
    Value::Array(items.iter().map(item_json).collect())
}

/// The payload column: the arguments of an envelope (its kind in its own column), the
/// whole bytes otherwise, or the size of a payload not loaded.
fn payload_cell(item: &StoredItem) -> (String, String) {
    match item.payload.as_deref() {
        None => ("-".into(), format!("({} bytes, not loaded)", item.size)),
        Some(p) => match split_kind(p) {
            (Some(kind), args) => (kind.to_string(), args_preview(args, PREVIEW)),
            (None, bytes) => ("-".into(), preview(bytes, PREVIEW)),
        },
    }
}

/// The id column's width: the longest id, whole (a Postgres id is up to 19 digits), at
/// least 10.
fn id_width(items: &[StoredItem]) -> usize {
    items
        .iter()
        .map(|i| i.id.get().to_string().len())
        .max()
        .unwrap_or(0)
        .max(10)
}

/// Live items as a table.
pub(crate) fn items_table(items: &[StoredItem]) -> String {
    if items.is_empty() {
        return "no items\n".into();
    }
    let now = SystemTime::now();
    let w = id_width(items);
    let mut out = format!(
        "{:>w$}  {:<9}  {:>8}  {:>3}  {:<12}  {:<14}  payload\n",
        "id", "state", "attempts", "pri", "kind", "due"
    );
    for item in items {
        let due = item
            .visible_at
            .or(item.deadline)
            .map_or("-".into(), |t| relative(t, now));
        let (kind, payload) = payload_cell(item);
        out.push_str(&format!(
            "{:>w$}  {:<9}  {:>8}  {:>3}  {:<12}  {:<14}  {}\n",
            item.id.get(),
            item.state.as_str(),
            item.attempts,
            item.priority,
            kind,
            due,
            payload
        ));
    }
    out
}

/// Dead letters as a table.
pub(crate) fn dead_table(items: &[StoredItem]) -> String {
    if items.is_empty() {
        return "no dead letters\n".into();
    }
    let now = SystemTime::now();
    let w = id_width(items);
    let mut out = format!(
        "{:>w$}  {:>8}  {:<13}  {:<12}  {:<10}  {:<36}  payload\n",
        "id", "attempts", "reason", "kind", "dead", "last error"
    );
    for item in items {
        let (kind, payload) = payload_cell(item);
        let error = item.last_error.as_deref().unwrap_or("-");
        let error: String = if error.chars().count() > 36 {
            error.chars().take(33).chain("...".chars()).collect()
        } else {
            error.to_string()
        };
        out.push_str(&format!(
            "{:>w$}  {:>8}  {:<13}  {:<12}  {:<10}  {:<36}  {}\n",
            item.id.get(),
            item.attempts,
            item.reason.map_or("-", |r| r.as_str()),
            kind,
            item.dead_at.map_or("-".into(), |t| relative(t, now)),
            error,
            payload
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{dead_table, item_json, items_table, preview, split_kind};
    use leaseq_async::{StoredItem, StoredState};
    use leaseq_core::MessageId;

    #[test]
    fn printable_text_is_quoted_and_the_rest_is_hex() {
        assert_eq!(preview(b"invoice 981", 48), "\"invoice 981\"");
        assert_eq!(preview(&[0xde, 0xad, 0x00], 48), "0xdead00");
        assert_eq!(preview(b"abcdef", 3), "\"abc\"...");
        assert_eq!(preview(b"a\nb", 48), "0x610a62", "a control character");
        assert_eq!(
            preview(&[0xde, 0xad], 48),
            "0xdead",
            "UTF-8 for a combining mark"
        );
        assert_eq!(preview(b"say \"hi\"", 48), "\"say \\\"hi\\\"\"");
    }

    #[test]
    fn an_envelope_splits_into_its_kind_and_arguments() {
        assert_eq!(split_kind(b"\x05email{}"), (Some("email"), &b"{}"[..]));
        assert_eq!(split_kind(b"plain"), (None, &b"plain"[..]));
        let text = "a plain text longer than its first letter's code, with spaces".repeat(2);
        assert_eq!(split_kind(text.as_bytes()).0, None);
    }

    #[test]
    fn a_traced_envelope_shows_its_kind_json_arguments_and_traceparent() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let mut bytes = b"\x05email\x01\x37".to_vec();
        bytes.extend_from_slice(tp.as_bytes());
        bytes.extend_from_slice(b"{\"to\":\"a\"}");
        assert_eq!(split_kind(&bytes), (Some("email"), &b"{\"to\":\"a\"}"[..]));
        let mut item = StoredItem::new(MessageId::new(7), StoredState::Ready, bytes.len() as u64);
        item.payload = Some(bytes);
        let json = item_json(&item);
        assert_eq!(
            (&json["kind"], &json["args"], &json["traceparent"]),
            (&"email".into(), &serde_json::json!({"to": "a"}), &tp.into())
        );
        assert!(items_table(&[item]).contains("  {\"to\":\"a\"}\n"));
        // An envelope without a trace block has none.
        let mut old = StoredItem::new(MessageId::new(8), StoredState::Ready, 8);
        old.payload = Some(b"\x05email{}".to_vec());
        assert_eq!(item_json(&old)["traceparent"], serde_json::Value::Null);
    }

    #[test]
    fn ids_are_printed_whole_in_aligned_columns() {
        // A Postgres id (instance 1, counter 5) and a transactional push's (from 2^62).
        let ids = [4_294_967_301_u64, 4_611_686_018_427_387_904, 7];
        let items: Vec<StoredItem> = ids
            .iter()
            .map(|&id| StoredItem::new(MessageId::new(id), StoredState::Ready, 0))
            .collect();
        for table in [items_table(&items), dead_table(&items)] {
            // Right-aligned: the header's "id" and every row's id end in the same column.
            let lines: Vec<&str> = table.lines().collect();
            let end = lines[0].find("id  ").map(|i| i + 2);
            for (line, id) in lines[1..].iter().zip(ids) {
                let whole = format!("{id}  ");
                assert_eq!(
                    line.find(&whole).map(|i| i + whole.len() - 2),
                    end,
                    "{table}"
                );
            }
        }
    }

    #[test]
    fn args_that_are_not_json_show_as_their_text() {
        let mut item = StoredItem::new(MessageId::new(1), StoredState::Ready, 5);
        item.payload = Some(b"\x03smshi".to_vec());
        assert_eq!(item_json(&item)["args"], "hi");
        assert!(items_table(&[item]).contains("  \"hi\"\n"));
    }
}
