//! What a command that did not succeed says, and its exit status.

use std::process::ExitCode;

/// A command that did not succeed.
#[derive(Debug)]
pub(crate) enum CliError {
    /// The store refused, failed or could not be reached: exit 1.
    Failed(String),
    /// The arguments do not make a command to run (a destructive one without `--yes`):
    /// exit 2, as clap's own usage errors.
    Usage(String),
}

impl CliError {
    /// Its exit status.
    pub(crate) fn exit_code(&self) -> ExitCode {
        match self {
            CliError::Failed(_) => ExitCode::from(1),
            CliError::Usage(_) => ExitCode::from(2),
        }
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Failed(e) | CliError::Usage(e) => f.write_str(e),
        }
    }
}

/// A failure from anything that displays.
pub(crate) fn failed(what: impl std::fmt::Display) -> CliError {
    CliError::Failed(what.to_string())
}

/// `e` and its causes in words, `: ` between them (what the store says, then what the
/// database or the system said under it): "cannot connect to PostgreSQL: authentication
/// failed for user \"x\": db error: FATAL: role \"x\" does not exist".
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    leaseq_async::ErrorChain(e).to_string()
}
