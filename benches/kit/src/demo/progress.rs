//! The progress of a long run: a thread of its own that shows a [`StatusLine`] every second
//! or two.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::StatusLine;

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
