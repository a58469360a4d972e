//! The table, each row beside the Python reference, the details and the reading.

use super::*;

// ----- output ----------------------------------------------------------------------------

pub(super) const HEADERS: [&str; 6] = [
    "processed",
    "lost",
    "dead-lettered",
    "twice",
    "late acks",
    "retrying",
];

pub(super) fn print_table(runtimes: &[(&str, &[RowResult])]) {
    let label_w = ROWS.iter().map(|r| r.label().len()).max().unwrap_or(0);
    let rt_w = runtimes
        .iter()
        .map(|(name, _)| name.len())
        .chain([PY_REF.len()])
        .max()
        .unwrap_or(0);
    let mut header = format!("{:label_w$}  {:rt_w$}", "row", "runtime");
    for h in HEADERS {
        header.push_str(&format!("  {h:>w$}", w = h.len().max(5)));
    }
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
    for (i, row) in ROWS.iter().enumerate() {
        for (k, (name, results)) in runtimes.iter().enumerate() {
            let r = &results[i];
            let cells = [
                r.processed,
                r.lost,
                r.dead_lettered,
                r.twice,
                r.late_acks,
                r.retrying,
            ]
            .map(|n| n.to_string());
            let label = if k == 0 { row.label() } else { "" };
            print_row(label, name, &cells, label_w, rt_w);
        }
        let reference = row.reference();
        if reference.iter().any(|c| *c != "-") {
            let source = if *row == Row::HandBack {
                EXPECTED
            } else {
                PY_REF
            };
            print_row("", source, &reference.map(String::from), label_w, rt_w);
        }
        println!();
    }
}

pub(super) const PY_REF: &str = "Python reference";
pub(super) const EXPECTED: &str = "expected";

pub(super) fn print_row(
    label: &str,
    runtime: &str,
    cells: &[String; 6],
    label_w: usize,
    rt_w: usize,
) {
    let mut line = format!("{label:label_w$}  {runtime:rt_w$}");
    for (h, c) in HEADERS.iter().zip(cells) {
        line.push_str(&format!("  {c:>w$}", w = h.len().max(5)));
    }
    println!("{line}");
}

pub(super) fn print_details(runtimes: &[(&str, &[RowResult])]) {
    println!(
        "Details at the cut: hung items dead-lettered (and when the last was); deliveries \
         after the first; leases that ran out; late acks split into stale refused / unclaimed \
         accepted / refused by (b')'s rule; real time the row took."
    );
    for (i, row) in ROWS.iter().enumerate() {
        if *row == Row::Plain {
            continue;
        }
        for (name, results) in runtimes {
            let r = &results[i];
            let last = r
                .last_hung_dead_at
                .map_or("-".to_string(), |t| format!("{:.2} s", t.as_secs_f64()));
            println!(
                "  {:<4} {:<20}  hung dead {:>2}/10, last at {:>7}  redelivered {:>3}  \
                 leases expired {:>3}  late {:>2}/{:>2}/{:>2}  {:>7.1} ms",
                row.tag(),
                name,
                r.hung_dead,
                last,
                r.redelivered,
                r.lease_expired,
                r.late_stale,
                r.late_unclaimed,
                r.late_refused,
                r.wall.as_secs_f64() * 1000.0,
            );
        }
    }
    println!();
}

pub(super) fn print_reading(r: &[RowResult]) {
    let [a, b, strict, c, d] = [&r[0], &r[1], &r[2], &r[3], &r[4]];
    let d_all = if d.hung_dead == 10 {
        format!(
            "all 10 hung items are dead-lettered inside the 10 s (the last at {:.2} s)",
            d.last_hung_dead_at.unwrap_or_default().as_secs_f64()
        )
    } else {
        format!(
            "{} of the 10 hung items are dead-lettered inside the 10 s and the other {} are \
             still retrying",
            d.hung_dead,
            10 - d.hung_dead
        )
    };
    println!(
        "Reading (first runtime's figures): the plain channel finishes {} items, and its \
         timeout drops the {} hung ones without a trace. The lease queue loses nothing. \
         Without a heartbeat the hung items end as {} dead letters after three lease expiries, \
         and every slow call (0.6 s) outlives its 0.5 s lease: {} late acks. Here leaseq \
         differs from the reference by design, not by a bug: an expired item rejoins the back \
         of the ready queue (items are served in the order they became visible), so during the \
         backlog nobody claims it in the 0.1 s before its first worker finishes, and leaseq \
         accepts that late ack because the item is unclaimed ({} of the {}); hence {} items run \
         twice instead of ~54. The reference's figures (twice = late acks = about the number \
         of slow calls) match those of a queue that refuses every ack after the deadline: row \
         (b') applies that rule and gives {} items run twice and {} late acks. With a \
         heartbeat slow work keeps its lease (twice {}, late acks {}), but a hung item now \
         holds its lease until the worker gives up at 2 s and comes back only when the \
         heartbeat stops, so by the cut {} are dead-lettered and {} still retrying. Handing the \
         item back at its timeout keeps that protection and frees the item at once: {}, with \
         {} items processed, {} twice and {} late acks. That last figure is tight and depends on \
         the seed: a hung item's three 2 s attempts now run one after another (6 s from its \
         first pickup, which comes late for an item near the back of the queue), and the \
         whole run needs about 94 worker-seconds of the 100 there are; with seeds 1 to 20 \
         (`--seeds 1-20`), 3 dead-letter all 10 by the cut and the others 6 to 9 (without a \
         heartbeat, in (b), the attempts overlap, as each lease runs out after 0.5 s while its worker is still \
         stuck).",
        a.processed,
        a.lost,
        b.dead_lettered,
        b.late_acks,
        b.late_unclaimed,
        b.late_acks,
        b.twice,
        strict.twice,
        strict.late_acks,
        c.twice,
        c.late_acks,
        c.dead_lettered,
        c.retrying,
        d_all,
        d.processed,
        d.twice,
        d.late_acks,
    );
}
