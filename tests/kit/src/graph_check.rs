//! The checker of the multi-process dependency tests (issue 33: `leaseq-sqlite`'s and
//! `leaseq-postgres`'s `tests/graph_kill9.rs`): what processes recorded while they were
//! killed with SIGKILL at random, checked against the graph that was pushed.
//!
//! Processes append one line per fact to a shared log ([`Event::line`], each line one
//! `write` on an `O_APPEND` file; a line cut by a kill, without its newline, is dropped by
//! [`parse`]):
//! - `run JOB MSG`: a handler started job `JOB`, delivered as message `MSG` (logged
//!   before the handler's work, so a run cut by a kill is still seen);
//! - `ack JOB MSG`: its ack returned `Ok` (committed). A process killed between the
//!   commit and the line leaves none: the test adds the acks it reads from the store at
//!   the end ([`Event::Acked`] too);
//! - `callback JOB MSG TOTAL ACKED DEAD CANCELLED`: a batch's callback ran, with the counts
//!   of its children's outcomes it read.
//!
//! [`check`] then says, for the graph given as [`Job`]s:
//! - every job **completes**: it ran and its ack was committed;
//! - no dependent **started before its last parent's ack was committed**: no parent ran
//!   after the first run of a job that waits for it (a parent's run is logged before its
//!   ack, its ack commits before the release, the release before the dependent's run; a
//!   parent that runs again after its dependent started had an ack that was not durable
//!   when the dependent was released, and a kill showed it);
//! - none is **released twice**: every run of a job is of one message;
//! - each batch's **callback** is released once (the previous rule) and every run of it
//!   read the exact counts expected.

use std::collections::BTreeMap;
use std::fmt;

/// One fact a process recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A handler started `job`, delivered as message `message`.
    Run {
        /// The job's name (its number in the test's graph).
        job: u64,
        /// The message it was delivered as.
        message: u64,
    },
    /// `job`'s ack was committed.
    Acked {
        /// The job.
        job: u64,
        /// Its message.
        message: u64,
    },
    /// A batch's callback ran and read these counts of its children.
    Callback {
        /// The callback's job.
        job: u64,
        /// Its message.
        message: u64,
        /// The counts it read.
        counts: Counts,
    },
}

/// A batch's counts as a callback reads them (the finished ones).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Children in the batch.
    pub total: u64,
    /// Acked.
    pub acked: u64,
    /// Dead-lettered.
    pub dead: u64,
    /// Cancelled.
    pub cancelled: u64,
}

impl Counts {
    /// The counts a callback reads from its parents' states (`parent_outcomes`): one per
    /// parent in `total`, each finished one in its column.
    pub fn of(states: impl IntoIterator<Item = leaseq_core::graph::StepState>) -> Self {
        use leaseq_core::graph::StepState;
        let mut counts = Counts::default();
        for state in states {
            counts.total += 1;
            match state {
                StepState::Acked(_) => counts.acked += 1,
                StepState::DeadLettered(_) => counts.dead += 1,
                StepState::Cancelled => counts.cancelled += 1,
                _ => {}
            }
        }
        counts
    }
}

impl Event {
    /// The event as a log line, with its newline.
    pub fn line(&self) -> String {
        match *self {
            Event::Run { job, message } => format!("run {job} {message}\n"),
            Event::Acked { job, message } => format!("ack {job} {message}\n"),
            Event::Callback {
                job,
                message,
                counts: c,
            } => format!(
                "callback {job} {message} {} {} {} {}\n",
                c.total, c.acked, c.dead, c.cancelled
            ),
        }
    }

    fn job(&self) -> u64 {
        match *self {
            Event::Run { job, .. } | Event::Acked { job, .. } | Event::Callback { job, .. } => job,
        }
    }
}

/// The events of a log, in order; a last line cut by a kill (no newline) is dropped, any
/// other line that does not parse is an error.
pub fn parse(log: &str) -> Result<Vec<Event>, String> {
    let mut events = Vec::new();
    let complete = log.rfind('\n').map_or("", |end| &log[..end]);
    for line in complete.lines().filter(|l| !l.is_empty()) {
        let words: Vec<u64> = line
            .split(' ')
            .skip(1)
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|e| format!("line {line:?}: {e}"))?;
        let event = match (line.split(' ').next(), &words[..]) {
            (Some("run"), &[job, message]) => Event::Run { job, message },
            (Some("ack"), &[job, message]) => Event::Acked { job, message },
            (Some("callback"), &[job, message, total, acked, dead, cancelled]) => Event::Callback {
                job,
                message,
                counts: Counts {
                    total,
                    acked,
                    dead,
                    cancelled,
                },
            },
            _ => return Err(format!("line {line:?}: not an event")),
        };
        events.push(event);
    }
    Ok(events)
}

/// A job of the graph pushed: its parents and, for a batch's callback, the counts it must
/// read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Job {
    /// The jobs it waits for.
    pub parents: Vec<u64>,
    /// For a batch's callback: the counts of its children's outcomes it must read.
    pub callback: Option<Counts>,
}

/// What [`check`] found wrong (empty: nothing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings(pub Vec<String>);

impl fmt::Display for Findings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().take(20).enumerate() {
            writeln!(f, "{}. {s}", i + 1)?;
        }
        if self.0.len() > 20 {
            writeln!(f, "... and {} more", self.0.len() - 20)?;
        }
        Ok(())
    }
}

/// What the log says of one job.
#[derive(Default)]
struct Seen {
    first_run: Option<usize>,
    last_run: Option<usize>,
    messages: Vec<u64>,
    acked: bool,
}

/// Checks `events` against the graph `jobs` (by job name); see the [module docs](self).
pub fn check(jobs: &BTreeMap<u64, Job>, events: &[Event]) -> Findings {
    let mut out = Vec::new();
    let mut seen: BTreeMap<u64, Seen> = BTreeMap::new();
    for (at, e) in events.iter().enumerate() {
        if !jobs.contains_key(&e.job()) {
            out.push(format!("event {at} {e:?}: no such job"));
            continue;
        }
        let s = seen.entry(e.job()).or_default();
        match *e {
            Event::Run { message, .. } => {
                s.first_run.get_or_insert(at);
                s.last_run = Some(at);
                if !s.messages.contains(&message) {
                    s.messages.push(message);
                }
            }
            Event::Acked { message, .. } => {
                s.acked = true;
                if !s.messages.contains(&message) {
                    s.messages.push(message);
                }
            }
            Event::Callback { job, counts, .. } => {
                let expected = jobs[&job].callback;
                if expected != Some(counts) {
                    out.push(format!(
                        "callback {job} read {counts:?}, expected {expected:?}"
                    ));
                }
            }
        }
    }
    for (&job, spec) in jobs {
        let Some(s) = seen.get(&job) else {
            out.push(format!("job {job} never ran"));
            continue;
        };
        if s.first_run.is_none() {
            out.push(format!("job {job} never ran"));
        }
        if !s.acked {
            out.push(format!("job {job}: no ack committed"));
        }
        if s.messages.len() > 1 {
            out.push(format!(
                "job {job} released twice: messages {:?}",
                s.messages
            ));
        }
        for p in &spec.parents {
            let parent_last = seen.get(p).and_then(|s| s.last_run);
            if let (Some(first), Some(parent)) = (s.first_run, parent_last) {
                if parent > first {
                    out.push(format!(
                        "job {job} started (event {first}) before parent {p}'s ack was \
                         committed: {p} ran again at event {parent}"
                    ));
                }
            }
        }
    }
    Findings(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain() -> BTreeMap<u64, Job> {
        let mut jobs = BTreeMap::new();
        jobs.insert(1, Job::default());
        jobs.insert(
            2,
            Job {
                parents: vec![1],
                callback: None,
            },
        );
        jobs
    }

    #[test]
    fn a_good_log_passes_and_each_fault_is_found() {
        let good = "run 1 10\nack 1 10\nrun 1 10\nack 1 10\nrun 2 11\nack 2 11\nrun 2";
        let events = parse(good).unwrap();
        assert_eq!(events.len(), 6, "the cut line dropped");
        assert_eq!(check(&chain(), &events), Findings::default());

        let early = parse("run 1 10\nrun 2 11\nrun 1 10\nack 1 10\nack 2 11\n").unwrap();
        assert_eq!(
            check(&chain(), &early).0.len(),
            1,
            "{:?}",
            check(&chain(), &early)
        );
        let twice = parse("run 1 10\nack 1 10\nrun 2 11\nrun 2 12\nack 2 12\n").unwrap();
        assert!(check(&chain(), &twice).0[0].contains("released twice"));
        let lost = parse("run 1 10\nack 1 10\n").unwrap();
        assert_eq!(check(&chain(), &lost).0, ["job 2 never ran"]);
        assert!(parse("walk 1 2\n").is_err());
    }

    #[test]
    fn a_callback_must_read_the_exact_counts() {
        let mut jobs = BTreeMap::new();
        let want = Counts {
            total: 1,
            acked: 1,
            ..Counts::default()
        };
        jobs.insert(1, Job::default());
        jobs.insert(
            2,
            Job {
                parents: vec![1],
                callback: Some(want),
            },
        );
        let ok = [
            Event::Run { job: 1, message: 5 },
            Event::Acked { job: 1, message: 5 },
            Event::Run { job: 2, message: 6 },
            Event::Callback {
                job: 2,
                message: 6,
                counts: want,
            },
            Event::Acked { job: 2, message: 6 },
        ];
        let text: String = ok.iter().map(Event::line).collect();
        assert_eq!(parse(&text).unwrap(), ok);
        assert_eq!(check(&jobs, &ok), Findings::default());
        let mut bad = ok;
        bad[3] = Event::Callback {
            job: 2,
            message: 6,
            counts: Counts::default(),
        };
        assert_eq!(check(&jobs, &bad).0.len(), 1);
    }
}
