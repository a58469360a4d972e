//! What the demo examples (`redelivery`, `item_timeouts`, `live_stats`) share: their command
//! line, their seeded choice of hung items, and the status line that shows a long run's
//! progress.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::rng::mix64;

/// The seed the demos use unless told otherwise.
pub const DEFAULT_SEED: u64 = 42;

/// Which options a demo takes besides `--seed N` and `-h`/`--help`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Spec<'a> {
    /// An on/off flag, for example `"--real-time"`.
    pub flag: Option<&'a str>,
    /// Whether `--seeds A-B` (run every seed from A to B) is taken.
    pub seeds: bool,
    /// Whether `--seconds N` is taken.
    pub seconds: bool,
}

impl<'a> Spec<'a> {
    /// A demo with one on/off flag and nothing else.
    pub const fn flag(flag: &'a str) -> Self {
        Spec {
            flag: Some(flag),
            seeds: false,
            seconds: false,
        }
    }
}

/// A demo's command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DemoArgs {
    /// `--seed N` (default [`DEFAULT_SEED`]).
    pub seed: u64,
    /// Whether the demo's flag was given.
    pub flag: bool,
    /// `--seeds A-B`: the first and last seed of a sweep.
    pub seeds: Option<(u64, u64)>,
    /// `--seconds N`.
    pub seconds: Option<u64>,
}

/// Parses `--seed N` (or `--seed=N`), `-h`/`--help` and the options `spec` names
/// (`--seeds A-B`, `--seconds N`, each also as `--name=value`) from `args`. `Ok(None)` asks
/// for the help text; `Err` says what was wrong.
pub fn parse_args(
    args: impl IntoIterator<Item = String>,
    spec: Spec<'_>,
) -> Result<Option<DemoArgs>, String> {
    let mut out = DemoArgs {
        seed: DEFAULT_SEED,
        flag: false,
        seeds: None,
        seconds: None,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(None);
        }
        if Some(arg.as_str()) == spec.flag {
            out.flag = true;
            continue;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name, Some(value.to_string())),
            _ => (arg.as_str(), None),
        };
        let known = match name {
            "--seed" => true,
            "--seeds" => spec.seeds,
            "--seconds" => spec.seconds,
            _ => false,
        };
        if !known {
            return Err(format!("unknown argument `{arg}`"));
        }
        let value = match inline {
            Some(v) => v,
            None => args.next().ok_or(format!("{name} needs a value"))?,
        };
        match name {
            "--seed" => out.seed = parse_number(name, &value)?,
            "--seeds" => out.seeds = Some(parse_seed_range(&value)?),
            _ => {
                let n = parse_number(name, &value)?;
                if n == 0 {
                    return Err("--seconds wants at least 1".to_string());
                }
                out.seconds = Some(n);
            }
        }
    }
    Ok(Some(out))
}

/// The process's own command line parsed by [`parse_args`]; on `--help` prints `usage` and
/// on a bad argument the error and `usage`, and returns the exit code to end with.
pub fn args_or_exit(spec: Spec<'_>, usage: &str) -> Result<DemoArgs, std::process::ExitCode> {
    match parse_args(std::env::args().skip(1), spec) {
        Ok(Some(args)) => Ok(args),
        Ok(None) => {
            println!("{usage}");
            Err(std::process::ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("error: {e}\n\n{usage}");
            Err(std::process::ExitCode::from(2))
        }
    }
}

fn parse_number(name: &str, value: &str) -> Result<u64, String> {
    value.parse().map_err(|_| {
        format!(
            "{name} wants a whole number from 0 to {}, not `{value}`",
            u64::MAX
        )
    })
}

/// `A-B` (or `A..=B`, or one seed `A`), first no greater than last.
fn parse_seed_range(value: &str) -> Result<(u64, u64), String> {
    let (a, b) = value
        .split_once("..=")
        .or_else(|| value.split_once('-'))
        .unwrap_or((value, value));
    let bad = || format!("--seeds wants a range such as 1-20, not `{value}`");
    let (a, b) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    if a > b {
        return Err(bad());
    }
    Ok((a, b))
}

/// Exactly `count` of `items` items marked hung, chosen by a partial Fisher-Yates shuffle
/// driven by `seed`.
pub fn pick_hung(seed: u64, items: u32, count: usize) -> Vec<bool> {
    let count = count.min(items as usize);
    let mut order: Vec<u32> = (0..items).collect();
    let mut state = seed;
    for i in 0..count {
        state = mix64(state);
        let j = i + (state % (items as u64 - i as u64)) as usize;
        order.swap(i, j);
    }
    let mut hung = vec![false; items as usize];
    for &i in &order[..count] {
        hung[i as usize] = true;
    }
    hung
}

// ----- the status line -------------------------------------------------------------------

/// One line of status on stdout: on a terminal it is redrawn in place (`\r`), elsewhere (a
/// CI log, a pipe) each update is a line of its own. Redrawn in place, a line is cut to the
/// terminal's width when the `COLUMNS` environment variable gives it (a line that wrapped
/// could not be redrawn).
#[derive(Debug)]
pub struct StatusLine {
    tty: bool,
    /// The terminal's width, if known.
    columns: Option<usize>,
    /// Characters of the line drawn in place, to blank out a longer old line.
    drawn: usize,
}

impl StatusLine {
    /// A status line on stdout, redrawn in place if stdout is a terminal.
    pub fn stdout() -> Self {
        StatusLine {
            tty: std::io::stdout().is_terminal(),
            columns: std::env::var("COLUMNS")
                .ok()
                .and_then(|c| c.trim().parse().ok())
                .filter(|&c: &usize| c > 1),
            drawn: 0,
        }
    }

    /// Whether updates redraw one line in place.
    pub fn in_place(&self) -> bool {
        self.tty
    }

    /// Shows `line`: redrawn in place on a terminal, printed as a new line otherwise.
    pub fn show(&mut self, line: &str) {
        let mut out = std::io::stdout().lock();
        if self.tty {
            let line: String = match self.columns {
                Some(columns) => line.chars().take(columns - 1).collect(),
                None => line.to_string(),
            };
            let width = line.chars().count();
            let pad = self.drawn.saturating_sub(width);
            let _ = write!(out, "\r{line}{:pad$}", "");
            self.drawn = width;
        } else {
            let _ = writeln!(out, "{line}");
        }
        let _ = out.flush();
    }

    /// Ends the line drawn in place (keeping it on screen), so that what is printed next
    /// starts on a line of its own. Does nothing off a terminal.
    pub fn keep(&mut self) {
        if self.tty && self.drawn > 0 {
            println!();
            self.drawn = 0;
        }
    }

    /// Blanks out the line drawn in place. Does nothing off a terminal.
    pub fn clear(&mut self) {
        if self.tty && self.drawn > 0 {
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "\r{:w$}\r", "", w = self.drawn);
            let _ = out.flush();
            self.drawn = 0;
        }
    }
}

type StatusFn = Box<dyn Fn() -> String + Send>;

struct ProgressState {
    line: StatusLine,
    status: Option<StatusFn>,
    stopped: bool,
}

struct ProgressShared {
    started: Instant,
    state: Mutex<ProgressState>,
    wake: Condvar,
}

impl ProgressShared {
    fn lock(&self) -> MutexGuard<'_, ProgressState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The progress of a long run, shown by a thread of its own: every second, redrawn in
/// place, on a terminal; every two seconds, a line each, elsewhere (a CI log). Each update
/// is `[elapsed] status`, where `status` is what the last [`set`](Self::set) gave; nothing
/// is shown while none is set. Dropping it stops the thread and blanks the line.
pub struct Progress {
    shared: Arc<ProgressShared>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts showing progress, with no status yet.
    pub fn start() -> Self {
        let line = StatusLine::stdout();
        let every = if line.in_place() {
            Duration::from_secs(1)
        } else {
            Duration::from_secs(2)
        };
        let shared = Arc::new(ProgressShared {
            started: Instant::now(),
            state: Mutex::new(ProgressState {
                line,
                status: None,
                stopped: false,
            }),
            wake: Condvar::new(),
        });
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("demo-progress".to_string())
                .spawn(move || progress_thread(&shared, every))
                .expect("spawn the progress thread")
        };
        Progress {
            shared,
            thread: Some(thread),
        }
    }

    /// Whether the updates redraw one line in place (stdout is a terminal) rather than print
    /// a line each.
    pub fn in_place(&self) -> bool {
        self.shared.lock().line.in_place()
    }

    /// What to show from now on: `status` is called at each update.
    pub fn set(&self, status: impl Fn() -> String + Send + 'static) {
        self.shared.lock().status = Some(Box::new(status));
    }

    /// Shows nothing until the next [`set`](Self::set).
    pub fn unset(&self) {
        self.shared.lock().status = None;
    }

    /// Stops the updates and blanks the line (what dropping it does).
    pub fn finish(self) {}
}

impl Drop for Progress {
    fn drop(&mut self) {
        {
            let mut state = self.shared.lock();
            state.stopped = true;
            state.status = None;
        }
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.shared.lock().line.clear();
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("started", &self.shared.started)
            .finish_non_exhaustive()
    }
}

fn progress_thread(shared: &ProgressShared, every: Duration) {
    let mut next = shared.started + every;
    let mut state = shared.lock();
    loop {
        // Checked before every wait, so a stop that came first is never slept through.
        if state.stopped {
            return;
        }
        let now = Instant::now();
        if now < next {
            state = shared
                .wake
                .wait_timeout(state, next - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            continue;
        }
        // One update per period, however late this one came.
        next += every;
        if next <= now {
            next = now + every;
        }
        // The status is read under the lock: it must be quick (counters, a queue's stats).
        if let Some(status) = &state.status {
            let elapsed = shared.started.elapsed().as_secs_f64();
            let line = format!("[{elapsed:5.1} s] {}", status());
            state.line.show(&line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_seed_flag_and_help() {
        let fast = Spec::flag("--fast");
        assert_eq!(
            parse_args(args(&["--seed", "7", "--fast"]), fast),
            Ok(Some(DemoArgs {
                seed: 7,
                flag: true,
                seeds: None,
                seconds: None,
            }))
        );
        assert_eq!(
            parse_args(args(&["--seed=9"]), fast),
            Ok(Some(DemoArgs {
                seed: 9,
                flag: false,
                seeds: None,
                seconds: None,
            }))
        );
        assert_eq!(parse_args(args(&["-h"]), fast), Ok(None));
        assert!(parse_args(args(&["--seed"]), fast).is_err());
        assert!(parse_args(args(&["--seed", "x"]), fast).is_err());
        assert!(parse_args(args(&["--slow"]), fast).is_err());
        // Options the spec does not name are refused.
        assert!(parse_args(args(&["--seeds", "1-20"]), fast).is_err());
        assert!(parse_args(args(&["--seconds", "3"]), fast).is_err());
    }

    #[test]
    fn parses_seed_ranges_and_seconds() {
        let spec = Spec {
            flag: None,
            seeds: true,
            seconds: true,
        };
        let parsed = |v: &[&str]| parse_args(args(v), spec).map(|a| a.map(|a| a.seeds));
        assert_eq!(parsed(&["--seeds", "1-20"]), Ok(Some(Some((1, 20)))));
        assert_eq!(parsed(&["--seeds=3..=5"]), Ok(Some(Some((3, 5)))));
        assert_eq!(parsed(&["--seeds", "7"]), Ok(Some(Some((7, 7)))));
        assert!(parsed(&["--seeds", "20-1"]).is_err());
        assert!(parsed(&["--seeds", "a-b"]).is_err());
        assert_eq!(
            parse_args(args(&["--seconds", "6"]), spec).map(|a| a.map(|a| a.seconds)),
            Ok(Some(Some(6)))
        );
        assert!(parse_args(args(&["--seconds", "0"]), spec).is_err());
        assert!(parse_args(args(&["--fast"]), spec).is_err());
    }

    #[test]
    fn picks_exactly_count_hung_items() {
        let hung = pick_hung(42, 500, 10);
        assert_eq!(hung.iter().filter(|&&h| h).count(), 10);
        assert_eq!(hung, pick_hung(42, 500, 10));
        assert_ne!(hung, pick_hung(43, 500, 10));
        assert_eq!(pick_hung(1, 3, 9).iter().filter(|&&h| h).count(), 3);
    }

    #[test]
    fn progress_starts_and_stops_at_once() {
        let started = Instant::now();
        let progress = Progress::start();
        progress.set(|| "working".to_string());
        progress.unset();
        progress.finish();
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
