//! What `pipeline_bench` prints: per-round samples reduced to medians, the throughput table
//! in markdown, and the goals each with its figure and whether it was met.

use std::collections::BTreeMap;

/// Rates (items/s) per row, one per round; a row that failed or was skipped in a round
/// has no sample for it.
#[derive(Default, Debug)]
pub struct Samples {
    rates: BTreeMap<String, Vec<(usize, f64)>>,
}

/// The median of `v` (the upper one of an even count); `None` if empty.
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied()
}

impl Samples {
    /// Records `rate` for `key` in round `round`.
    pub fn add(&mut self, key: &str, round: usize, rate: f64) {
        self.rates
            .entry(key.to_owned())
            .or_default()
            .push((round, rate));
    }

    /// The median rate of `key` over its rounds.
    pub fn median(&self, key: &str) -> Option<f64> {
        median(self.rates.get(key)?.iter().map(|(_, r)| *r).collect())
    }

    /// The lowest and highest rate of `key`.
    pub fn range(&self, key: &str) -> Option<(f64, f64)> {
        let v = self.rates.get(key)?;
        let lo = v.iter().map(|(_, r)| *r).fold(f64::INFINITY, f64::min);
        let hi = v.iter().map(|(_, r)| *r).fold(f64::NEG_INFINITY, f64::max);
        (!v.is_empty()).then_some((lo, hi))
    }

    /// The median over rounds of `a / b` taken within each round both have; if they share
    /// no round (rows of different sections), the ratio of their medians.
    pub fn ratio(&self, a: &str, b: &str) -> Option<f64> {
        let (va, vb) = (self.rates.get(a)?, self.rates.get(b)?);
        let within: Vec<f64> = va
            .iter()
            .filter_map(|(ra, x)| vb.iter().find(|(rb, _)| rb == ra).map(|(_, y)| x / y))
            .collect();
        if within.is_empty() {
            Some(self.median(a)? / self.median(b)?)
        } else {
            median(within)
        }
    }
}

/// A throughput row: what ran, at which durability, and which ratio goes beside it.
pub struct Row {
    /// The key of its samples.
    pub key: &'static str,
    /// The system, e.g. `leaseq-sqlite`.
    pub system: &'static str,
    /// Its durability setting, in words.
    pub durability: &'static str,
    /// How it consumed, e.g. `Pool(4)`.
    pub consumer: &'static str,
    /// The row whose rate this one is divided by, and that ratio's name.
    pub ratio_to: Option<(&'static str, &'static str)>,
}

/// `12,345`.
pub fn thousands(x: f64) -> String {
    let s = format!("{:.0}", x.max(0.0));
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Prints `rows` as a markdown table: items/s (median, and the range when there were
/// several rounds) and the named ratio.
pub fn print_table(rows: &[Row], s: &Samples, why_missing: &BTreeMap<String, String>) {
    println!("| system | durability | consumer | items/s (median [range]) | ratio |");
    println!("|---|---|---|---:|---|");
    for r in rows {
        let rate = match (s.median(r.key), s.range(r.key)) {
            (Some(m), Some((lo, hi))) if lo < hi => {
                format!("{} [{}-{}]", thousands(m), thousands(lo), thousands(hi))
            }
            (Some(m), _) => thousands(m),
            _ => why_missing
                .get(r.key)
                .cloned()
                .unwrap_or_else(|| "not run".to_owned()),
        };
        let ratio = r
            .ratio_to
            .and_then(|(to, name)| Some(format!("{:.2}x {name}", s.ratio(r.key, to)?)))
            .unwrap_or_default();
        println!(
            "| {} | {} | {} | {rate} | {ratio} |",
            r.system, r.durability, r.consumer
        );
    }
}

/// One of the goals: a figure against a floor (met when `figure >= floor`) or a
/// ceiling (met when `figure <= floor`, with `at_most`).
pub struct Goal {
    /// What is measured.
    pub what: String,
    /// The figure, if it was measured.
    pub figure: Option<f64>,
    /// The bound.
    pub bound: f64,
    /// Whether the bound is a ceiling.
    pub at_most: bool,
    /// How to print the figure and the bound: `"x"`, `"items/s"` or `"ms"`.
    pub unit: &'static str,
}

impl Goal {
    fn show(&self, x: f64) -> String {
        match self.unit {
            "items/s" => format!("{} items/s", thousands(x)),
            "ms" => format!("{x:.2} ms"),
            u => format!("{x:.2}{u}"),
        }
    }
}

/// Prints the goals as a markdown table; returns how many were missed.
pub fn print_goals(goals: &[Goal]) -> usize {
    println!("| goal | measured | bound | met |");
    println!("|---|---:|---:|---|");
    let mut missed = 0;
    for g in goals {
        let (figure, met) = match g.figure {
            None => ("not measured".to_owned(), "n/a"),
            Some(x) => {
                let ok = if g.at_most {
                    x <= g.bound
                } else {
                    x >= g.bound
                };
                missed += usize::from(!ok);
                (g.show(x), if ok { "met" } else { "MISSED" })
            }
        };
        let op = if g.at_most { "<=" } else { ">=" };
        println!(
            "| {} | {figure} | {op} {} | {met} |",
            g.what,
            g.show(g.bound)
        );
    }
    missed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_are_taken_within_rounds_else_between_medians() {
        let mut s = Samples::default();
        // Within rounds: 10/5 = 2 and 30/10 = 3; the ratio of the medians would be 30/10.
        for (round, a, b) in [(0, 10.0, 5.0), (1, 30.0, 10.0), (2, 20.0, 4.0)] {
            s.add("a", round, a);
            s.add("b", round, b);
        }
        assert_eq!(s.ratio("a", "b"), Some(3.0)); // median of 2, 3, 5
        assert_eq!(s.median("a"), Some(20.0));
        assert_eq!(s.range("b"), Some((4.0, 10.0)));
        // No shared round: medians.
        s.add("c", 7, 40.0);
        assert_eq!(s.ratio("c", "a"), Some(2.0));
        assert_eq!(s.ratio("a", "missing"), None);
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0.4), "0");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1_000.0), "1,000");
        assert_eq!(thousands(1_234_567.6), "1,234,568");
    }

    #[test]
    fn goals_count_what_was_missed() {
        let goal = |figure, bound, at_most| Goal {
            what: "g".into(),
            figure,
            bound,
            at_most,
            unit: "x",
        };
        let goals = [
            goal(Some(0.9), 0.8, false), // met
            goal(Some(0.7), 0.8, false), // missed
            goal(Some(4.0), 5.0, true),  // met: a ceiling
            goal(Some(6.0), 5.0, true),  // missed
            goal(None, 1.0, false),      // not measured: neither
        ];
        assert_eq!(print_goals(&goals), 2);
    }
}
