//! Charts drawn on the server as inline SVG (no script, no image fetched): a queue's
//! counts by state as bars, and a one-line stacked bar for the overview's rows.

use leaseq_async::StoredCounts;

use crate::html::Html;

/// The states in the order they are drawn, with their CSS class and label.
fn parts(c: &StoredCounts) -> [(&'static str, &'static str, u64); 4] {
    [
        ("ready", "ready", c.ready),
        ("delayed", "delayed", c.delayed),
        ("in-flight", "in flight", c.in_flight),
        ("dead", "dead", c.dead),
    ]
}

/// Bars, one per state, scaled to the largest count; each labelled with its count.
pub(crate) fn state_bars(h: &mut Html, c: &StoredCounts) {
    const WIDTH: u64 = 360;
    const ROW: u64 = 26;
    let max = parts(c).iter().map(|p| p.2).max().unwrap_or(0).max(1);
    h.raw("<svg class=\"chart\" role=\"img\" aria-label=\"items by state\" viewBox=\"0 0 560 ")
        .show(ROW * 4)
        .raw("\" width=\"560\" height=\"")
        .show(ROW * 4)
        .raw("\" xmlns=\"http://www.w3.org/2000/svg\">");
    for (i, (class, label, n)) in parts(c).into_iter().enumerate() {
        let y = i as u64 * ROW;
        // At least one pixel for a state that has items, so a small one still shows.
        let w = if n == 0 {
            0
        } else {
            (n.saturating_mul(WIDTH) / max).max(1)
        };
        h.raw("<text class=\"label\" x=\"0\" y=\"")
            .show(y + 17)
            .raw("\">")
            .raw(label)
            .raw("</text><rect class=\"bar ")
            .raw(class)
            .raw("\" x=\"90\" y=\"")
            .show(y + 4)
            .raw("\" width=\"")
            .show(w)
            .raw("\" height=\"18\"></rect><text class=\"value\" x=\"")
            .show(96 + w)
            .raw("\" y=\"")
            .show(y + 17)
            .raw("\">")
            .show(n)
            .raw("</text>");
    }
    h.raw("</svg>");
}

/// A 120-pixel bar split in proportion to the four states (empty for an empty queue).
pub(crate) fn stacked(h: &mut Html, c: &StoredCounts) {
    const WIDTH: u64 = 120;
    let total = c.ready + c.delayed + c.in_flight + c.dead;
    h.raw("<svg class=\"stack\" width=\"120\" height=\"10\" viewBox=\"0 0 120 10\" aria-hidden=\"true\" xmlns=\"http://www.w3.org/2000/svg\"><rect class=\"track\" width=\"120\" height=\"10\"></rect>");
    let mut x = 0;
    for (class, _, n) in parts(c) {
        // (An empty queue: no segment.)
        let w = n.saturating_mul(WIDTH).checked_div(total).unwrap_or(0);
        if w > 0 {
            h.raw("<rect class=\"bar ")
                .raw(class)
                .raw("\" x=\"")
                .show(x)
                .raw("\" width=\"")
                .show(w)
                .raw("\" height=\"10\"></rect>");
        }
        x += w;
    }
    h.raw("</svg>");
}
