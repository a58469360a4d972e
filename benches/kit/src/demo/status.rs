//! One line of status on stdout, redrawn in place on a terminal.

use std::io::{IsTerminal, Write};

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
