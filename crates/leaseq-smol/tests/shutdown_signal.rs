//! `shutdown_signal` completes on SIGTERM and on SIGINT sent to this process, and a signal
//! sent after the call but before the first poll is not lost (nor does it end the process).
#![cfg(unix)]

use std::time::Duration;

use futures_lite::future;

/// Sends `signal` (`TERM`, `INT`) to this process with `kill(1)`.
fn raise(signal: &str) {
    let pid = std::process::id().to_string();
    let status = std::process::Command::new("kill")
        .args([format!("-{signal}").as_str(), pid.as_str()])
        .status()
        .expect("run kill");
    assert!(status.success());
}

#[test]
fn completes_on_sigterm_then_sigint() {
    for signal in ["TERM", "INT"] {
        let stop = leaseq_smol::shutdown_signal();
        // Before the first poll: caught already.
        raise(signal);
        let done = smol::block_on(future::or(
            async {
                stop.await;
                true
            },
            async {
                async_io::Timer::after(Duration::from_secs(60)).await;
                false
            },
        ));
        assert!(done, "SIG{signal} seen within a minute");
    }
}
