//! `history`: the record of a queue's finished jobs (kept by stores opened with a
//! retention window: Postgres's `Options::retention`), paged and filtered by kind and
//! outcome, as a table or JSON.

use std::time::SystemTime;

use clap::Args;
use leaseq_async::{FinishOutcome, Finished, HistoryQuery};
use serde_json::{json, Value};

use crate::args::Output;
use crate::show::{relative, unix_ms};

/// `history`'s arguments.
#[derive(Debug, Args)]
pub(crate) struct History {
    /// At most this many entries.
    #[arg(long, default_value_t = 100)]
    pub(crate) limit: usize,
    /// Only entries after this one (the last `seq` of the previous page).
    #[arg(long)]
    pub(crate) after: Option<u64>,
    /// Only jobs of this kind (a job router envelope's).
    #[arg(long)]
    pub(crate) kind: Option<String>,
    /// Only entries with this outcome: acked, dead, cancelled, expired.
    #[arg(long, value_parser = parse_outcome)]
    pub(crate) outcome: Option<FinishOutcome>,
    #[command(flatten)]
    pub(crate) output: Output,
}

impl History {
    /// The query these arguments make.
    pub(crate) fn query(&self) -> HistoryQuery {
        let mut q = HistoryQuery::first(self.limit);
        q.after = self.after;
        q.kind = self.kind.clone();
        q.outcome = self.outcome;
        q
    }
}

/// An outcome by its name.
fn parse_outcome(s: &str) -> Result<FinishOutcome, String> {
    FinishOutcome::from_name(s.trim()).ok_or_else(|| {
        let names: Vec<&str> = FinishOutcome::ALL.iter().map(|o| o.as_str()).collect();
        format!("unknown outcome {s:?}; one of: {}", names.join(", "))
    })
}

/// A duration in seconds, milliseconds below one.
fn took(f: &Finished) -> String {
    match f.duration {
        None => "-".into(),
        Some(d) if d.as_secs() == 0 => format!("{}ms", d.as_millis()),
        Some(d) => format!("{:.1}s", d.as_secs_f64()),
    }
}

/// Entries as a table, one row each, times relative to now.
pub(crate) fn history_table(entries: &[Finished]) -> String {
    if entries.is_empty() {
        return "no finished jobs recorded\n".into();
    }
    let now = SystemTime::now();
    let seq_w = entries
        .iter()
        .map(|f| f.seq.to_string().len())
        .max()
        .unwrap_or(0)
        .max(3);
    let id_w = entries
        .iter()
        .map(|f| f.id.to_string().len())
        .max()
        .unwrap_or(0)
        .max(2);
    let kind = |f: &Finished| f.kind.clone().unwrap_or_else(|| "-".into());
    let kind_w = entries
        .iter()
        .map(|f| kind(f).chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let mut out = format!(
        "{:>seq_w$}  {:>id_w$}  {:<kind_w$}  {:<9}  {:>8}  {:<12}  {:<12}  {:>8}  {:<13}  error\n",
        "seq", "id", "kind", "outcome", "attempts", "pushed", "finished", "took", "reason"
    );
    for f in entries {
        let at = |t: Option<SystemTime>| t.map_or("-".into(), |t| relative(t, now));
        out.push_str(&format!(
            "{:>seq_w$}  {:>id_w$}  {:<kind_w$}  {:<9}  {:>8}  {:<12}  {:<12}  {:>8}  {:<13}  {}\n",
            f.seq,
            f.id,
            kind(f),
            f.outcome.as_str(),
            f.attempts,
            at(f.pushed_at),
            at(Some(f.finished_at)),
            took(f),
            f.reason.map_or("-", |r| r.as_str()),
            f.last_error.as_deref().unwrap_or("-").replace('\n', " "),
        ));
    }
    out
}

/// Entries as JSON, an array; times in milliseconds since the Unix epoch, the duration in
/// milliseconds.
pub(crate) fn history_json(entries: &[Finished]) -> Value {
    Value::Array(
        entries
            .iter()
            .map(|f| {
                json!({
                    "seq": f.seq,
                    "id": f.id.get(),
                    "kind": f.kind,
                    "outcome": f.outcome.as_str(),
                    "reason": f.reason.map(|r| r.as_str()),
                    "attempts": f.attempts,
                    "pushed_at_ms": f.pushed_at.map(unix_ms),
                    "started_at_ms": f.started_at.map(unix_ms),
                    "finished_at_ms": unix_ms(f.finished_at),
                    "duration_ms": f.duration.map(|d| d.as_secs_f64() * 1000.0),
                    "last_error": f.last_error,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    use leaseq_async::{MessageId, Reason};

    #[test]
    fn an_entry_shows_its_kind_outcome_times_and_error() {
        let at = |s: u64| UNIX_EPOCH + Duration::from_secs(s);
        let mut f = Finished::new(
            7,
            MessageId::new(4294967301),
            FinishOutcome::DeadLettered,
            3,
            at(1_700_000_060),
        );
        f.kind = Some("email".into());
        f.reason = Some(Reason::Nacked);
        f.pushed_at = Some(at(1_700_000_000));
        f.started_at = Some(at(1_700_000_001));
        f.duration = Some(Duration::from_millis(250));
        f.last_error = Some("smtp down".into());
        let table = history_table(std::slice::from_ref(&f));
        assert!(table.starts_with("seq"), "{table}");
        for want in [
            "4294967301",
            "email",
            "dead",
            "250ms",
            "nacked",
            "smtp down",
        ] {
            assert!(table.contains(want), "{want} in {table}");
        }
        let json = history_json(&[f]);
        assert_eq!(json[0]["id"], 4294967301u64);
        assert_eq!(json[0]["kind"], "email");
        assert_eq!(json[0]["outcome"], "dead");
        assert_eq!(json[0]["finished_at_ms"], 1_700_000_060_000i64);
        assert_eq!(json[0]["duration_ms"], 250.0);
        assert_eq!(history_table(&[]), "no finished jobs recorded\n");
    }

    #[test]
    fn outcomes_parse_by_name() {
        assert_eq!(parse_outcome("acked"), Ok(FinishOutcome::Acked));
        assert!(parse_outcome("done")
            .unwrap_err()
            .contains("acked, dead, cancelled, expired"));
    }
}
