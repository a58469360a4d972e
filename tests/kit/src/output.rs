//! A command's output, checked: what the CLI tests ask of the `leaseq` binary's runs.

use std::process::{Command, Output};

/// Runs `exe` with `args` to its end; its output.
pub fn run(exe: &str, args: &[&str]) -> Output {
    Command::new(exe)
        .args(args)
        .output()
        .expect("run the command")
}

/// The standard output of a run that succeeded (panics with its exit and stderr if not).
pub fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("UTF-8 output")
}

/// The standard output of a run that succeeded, as JSON.
#[cfg(feature = "cli")]
pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_str(&stdout(o)).expect("JSON")
}

/// The standard output of a run that succeeded, as the elements of a JSON array.
#[cfg(feature = "cli")]
pub fn json_rows(o: &Output) -> Vec<serde_json::Value> {
    match json(o) {
        serde_json::Value::Array(rows) => rows,
        other => panic!("not a JSON array: {other}"),
    }
}

/// Asserts that the run exited with `code` and that its stderr says `says`.
pub fn fails(o: &Output, code: i32, says: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "stderr: {err}");
    assert!(err.contains(says), "{says:?} not in: {err}");
}
