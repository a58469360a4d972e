//! Charts over time, drawn on the server as inline SVG: finished jobs per minute stacked by
//! outcome (throughput) and the failed share of each minute (failure rate), over the last
//! hour. Every minute's column carries its numbers as data attributes (`data-minute`, minutes
//! since the Unix epoch; `data-acked`, `data-dead`, `data-cancelled`, `data-expired`;
//! `data-failure-ppm` where a job finished) and a `<title>` a browser shows on hover.

use leaseq_async::FinishOutcome;

use crate::html::Html;
use crate::throughput::{Counts, Minutes};

/// Width of one minute's column.
const COLUMN: u64 = 9;
/// Left margin (the scale's labels).
const LEFT: u64 = 48;
/// Height of the plot.
const PLOT: u64 = 100;
/// Width of the whole chart.
const WIDTH: u64 = LEFT + 60 * COLUMN + 12;
/// Height of the whole chart (the plot and the time labels under it).
const HEIGHT: u64 = PLOT + 30;

/// The outcomes as drawn, bottom up: code, CSS class, data attribute.
const STACK: [(FinishOutcome, &str, &str); 4] = [
    (FinishOutcome::Acked, "acked", "data-acked"),
    (FinishOutcome::DeadLettered, "dead", "data-dead"),
    (FinishOutcome::Expired, "expired", "data-expired"),
    (FinishOutcome::Cancelled, "cancelled", "data-cancelled"),
];

fn get(c: &Counts, o: FinishOutcome) -> u64 {
    c[usize::from(o.code())]
}

/// Failed (dead-lettered or expired) of finished, in parts per million (`None`: none finished).
pub(crate) fn failure_ppm(c: &Counts) -> Option<u64> {
    let total: u64 = c.iter().sum();
    let failed = get(c, FinishOutcome::DeadLettered) + get(c, FinishOutcome::Expired);
    failed.saturating_mul(1_000_000).checked_div(total)
}

/// `HH:MM` (UTC) of a minute since the Unix epoch.
fn clock(minute: u64) -> String {
    format!("{:02}:{:02}", (minute % 1440) / 60, minute % 60)
}

/// The opening of a chart's SVG, its axis and the time labels.
fn frame(h: &mut Html, id: &'static str, label: &'static str, m: &Minutes, top: &str) {
    h.raw("<svg class=\"chart timeline\" id=\"")
        .raw(id)
        .raw("\" role=\"img\" aria-label=\"")
        .raw(label)
        .raw("\" data-first-minute=\"")
        .show(m.first)
        .raw("\" viewBox=\"0 0 ")
        .show(WIDTH)
        .raw(" ")
        .show(HEIGHT)
        .raw("\" width=\"")
        .show(WIDTH)
        .raw("\" height=\"")
        .show(HEIGHT)
        .raw("\" xmlns=\"http://www.w3.org/2000/svg\"><line class=\"axis\" x1=\"")
        .show(LEFT)
        .raw("\" y1=\"")
        .show(PLOT + 2)
        .raw("\" x2=\"")
        .show(WIDTH - 8)
        .raw("\" y2=\"")
        .show(PLOT + 2)
        .raw("\"></line><text class=\"scale\" x=\"0\" y=\"12\">")
        .text(top)
        .raw("</text><text class=\"scale\" x=\"0\" y=\"")
        .show(PLOT)
        .raw("\">0</text>");
    let last = m.first + m.counts.len() as u64 - 1;
    for (i, minute) in [(0, m.first), (30, m.first + 30), (59, last)] {
        h.raw("<text class=\"scale\" x=\"")
            .show(LEFT + i * COLUMN)
            .raw("\" y=\"")
            .show(PLOT + 18)
            .raw("\">")
            .text(&clock(minute))
            .raw(if i == 59 { " UTC</text>" } else { "</text>" });
    }
}

/// Finished jobs per minute, stacked by outcome, scaled to the busiest minute.
pub(crate) fn throughput(h: &mut Html, m: &Minutes) {
    let max = m
        .counts
        .iter()
        .map(|c| c.iter().sum::<u64>())
        .max()
        .unwrap_or(0);
    frame(
        h,
        "throughput",
        "finished jobs per minute",
        m,
        &max.to_string(),
    );
    for (i, c) in m.counts.iter().enumerate() {
        let minute = m.first + i as u64;
        h.raw("<g class=\"minute\" data-minute=\"")
            .show(minute)
            .raw("\"");
        for (o, _, attr) in STACK {
            h.raw(" ").raw(attr).raw("=\"").show(get(c, o)).raw("\"");
        }
        h.raw("><title>").text(&clock(minute)).raw(" UTC:");
        for (o, class, _) in STACK {
            h.raw(" ").show(get(c, o)).raw(" ").raw(class).raw(",");
        }
        h.raw("</title>");
        let mut y = PLOT;
        for (o, class, _) in STACK {
            let n = get(c, o);
            if n == 0 {
                continue;
            }
            // At least one pixel for a minute with jobs, so a quiet one still shows.
            let height = (n.saturating_mul(PLOT) / max.max(1)).max(1).min(y);
            y -= height;
            h.raw("<rect class=\"bar ")
                .raw(class)
                .raw("\" x=\"")
                .show(LEFT + i as u64 * COLUMN)
                .raw("\" y=\"")
                .show(y)
                .raw("\" width=\"")
                .show(COLUMN - 2)
                .raw("\" height=\"")
                .show(height)
                .raw("\"></rect>");
        }
        h.raw("</g>");
    }
    h.raw("</svg>");
}

/// The failed share (dead-lettered or expired) of each minute's finished jobs, 0 to 100 %.
pub(crate) fn failure_rate(h: &mut Html, m: &Minutes) {
    frame(h, "failure-rate", "failure rate per minute", m, "100%");
    for (i, c) in m.counts.iter().enumerate() {
        let minute = m.first + i as u64;
        h.raw("<g class=\"minute\" data-minute=\"")
            .show(minute)
            .raw("\"");
        let Some(ppm) = failure_ppm(c) else {
            h.raw("><title>")
                .text(&clock(minute))
                .raw(" UTC: none finished</title></g>");
            continue;
        };
        h.raw(" data-failure-ppm=\"")
            .show(ppm)
            .raw("\"><title>")
            .text(&clock(minute))
            .raw(" UTC: ")
            .text(&format!("{:.1}", ppm as f64 / 10_000.0))
            .raw("% failed</title>");
        let height = if ppm == 0 {
            0
        } else {
            (ppm * PLOT / 1_000_000).max(1)
        };
        h.raw("<rect class=\"bar dead\" x=\"")
            .show(LEFT + i as u64 * COLUMN)
            .raw("\" y=\"")
            .show(PLOT - height)
            .raw("\" width=\"")
            .show(COLUMN - 2)
            .raw("\" height=\"")
            .show(height)
            .raw("\"></rect></g>");
    }
    h.raw("</svg>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_is_dead_and_expired_of_all_finished() {
        assert_eq!(failure_ppm(&[0; 4]), None);
        // acked 3, dead 1, cancelled 0, expired 0.
        assert_eq!(failure_ppm(&[3, 1, 0, 0]), Some(250_000));
        assert_eq!(failure_ppm(&[0, 1, 2, 1]), Some(500_000));
    }

    #[test]
    fn a_minute_is_written_as_utc_clock_time() {
        assert_eq!(clock(0), "00:00");
        assert_eq!(clock(1440 + 61), "01:01");
    }
}
