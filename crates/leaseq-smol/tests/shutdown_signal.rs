//! `shutdown_signal` completes on SIGTERM and on SIGINT sent to this process, and a signal
//! sent after the call but before the first poll is not lost (nor does it end the process).
#![cfg(unix)]

use std::time::Duration;

use leaseq_test_kit::child::raise;

use futures_lite::future;

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
