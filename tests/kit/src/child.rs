//! Child processes for kill -9 and deploy tests: the test binary run again, alone, as the
//! child (a `#[test]` that does nothing unless its environment variables are set).

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The values of the environment variables `prefix` + each of `names`, or `None` if any
/// is unset (the child test was not started as a child: it returns at once).
pub fn vars<const N: usize>(prefix: &str, names: [&str; N]) -> Option<[String; N]> {
    let mut values: [String; N] = std::array::from_fn(|_| String::new());
    for (value, name) in values.iter_mut().zip(names) {
        *value = std::env::var(format!("{prefix}{name}")).ok()?;
    }
    Some(values)
}

/// The number in the environment variable `name`, or `default` when it is unset or not a
/// number (how many rounds, seeds or kills a test runs: small for CI, more by hand).
pub fn count(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// This test binary's test `name` alone, as a child process (exact name, one thread, its
/// output not captured), with `env` set: the command, to be spawned.
pub fn command<S: AsRef<OsStr>>(name: &str, env: &[(&str, S)]) -> Command {
    let mut cmd = Command::new(std::env::current_exe().expect("the test binary"));
    cmd.args(["--exact", name, "--test-threads=1", "--nocapture"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Runs this test binary's test `name` alone as a child process with `env` (as user and
/// group `uid` if given); returns its exit status and what it printed (stdout, then
/// stderr).
pub fn run<S: AsRef<OsStr>>(
    name: &str,
    env: &[(&str, S)],
    uid: Option<u32>,
) -> (ExitStatus, String) {
    let mut cmd = command(name, env);
    if let Some(uid) = uid {
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            cmd.uid(uid).gid(uid);
        }
        #[cfg(not(unix))]
        let _ = uid;
    }
    let out = cmd.output().expect("run the child");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status, text)
}

/// One run of a deploy child (test `name`, with `env`) whose lines say `STEP ..` for each
/// step done and `DONE ..` at the end: sent SIGTERM once it has printed `stop_after` step
/// lines, or once it is done if `None`. Returns its lines; panics if it runs over 120 s or
/// ends with a failure.
#[cfg(unix)]
pub fn run_until_term<S: AsRef<OsStr>>(
    name: &str,
    env: &[(&str, S)],
    stop_after: Option<u8>,
) -> Vec<String> {
    let mut child = command(name, env)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the child");
    let lines = BufReader::new(child.stdout.take().expect("its stdout")).lines();
    let mut seen = Vec::new();
    let mut steps = 0;
    let mut signalled = false;
    let start = Instant::now();
    for line in lines {
        let line = line.expect("a line of the child's");
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the child hangs"
        );
        steps += u8::from(line.starts_with("STEP"));
        let due = match stop_after {
            Some(n) => steps >= n,
            None => line.starts_with("DONE"),
        };
        seen.push(line);
        if due && !signalled {
            signalled = true;
            let pid = child.id().to_string();
            let sent = Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .expect("kill");
            assert!(sent.success());
        }
    }
    let status = child.wait().expect("the child's status");
    assert!(status.success(), "the child ended with {status}: {seen:?}");
    seen
}

/// Runs this test binary's test `name` alone as a child process with `env` and kills it
/// with SIGKILL as soon as it prints a line that contains `marker` (kill -9 mid-job);
/// panics if it ends before printing one.
pub fn kill_at<S: AsRef<OsStr>>(name: &str, env: &[(&str, S)], marker: &str) {
    let mut child = command(name, env)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the child");
    let mut lines = BufReader::new(child.stdout.take().expect("its stdout")).lines();
    assert!(
        lines.any(|l| l.expect("a line of the child's").contains(marker)),
        "the child ended before printing {marker:?}"
    );
    child.kill().expect("SIGKILL the child");
    child.wait().expect("the child's status");
}

/// Sends `signal` (`TERM`, `INT`, ...) to this process with `kill(1)`.
#[cfg(unix)]
pub fn raise(signal: &str) {
    let pid = std::process::id().to_string();
    let status = Command::new("kill")
        .args([format!("-{signal}").as_str(), pid.as_str()])
        .status()
        .expect("run kill");
    assert!(status.success());
}
