//! `shutdown_signal` completes on SIGTERM and on SIGINT sent to this process, and a signal
//! sent after the call but before the first poll is not lost (nor does it end the process).
#![cfg(unix)]

use std::time::Duration;

use leaseq_test_kit::child::raise;

#[test]
fn completes_on_sigterm_then_sigint() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    for signal in ["TERM", "INT"] {
        let stop = {
            let _inside = rt.enter();
            leaseq_tokio::shutdown_signal()
        };
        // Before the first poll: caught already.
        raise(signal);
        let done = rt.block_on(async { tokio::time::timeout(Duration::from_secs(60), stop).await });
        assert!(done.is_ok(), "SIG{signal} seen within a minute");
    }
}
