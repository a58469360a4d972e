//! Issue 30's deploy test on any store ("shutdown that costs no attempt"): a 10 s job
//! checkpointed after each of its 100 steps, stopped five times by SIGTERM to the child
//! process running it with a grace shorter than the work left; what the child prints and
//! what each stop must leave.

use std::future::Future;
use std::time::Duration;

use futures::future::{select, Either};
use leaseq_async::{Job, JobError};

/// The job's steps: 100 of 100 ms, 10 s in all.
pub const STEPS: u8 = 100;
/// One step's work.
pub const STEP: Duration = Duration::from_millis(100);
/// The grace a stop gives: shorter than the work left at every stop.
pub const GRACE: Duration = Duration::from_millis(300);
/// How many stops the test makes before it lets the job finish.
pub const STOPS: u8 = 5;

/// The handler: resumes at the checkpoint's step (`[step, stops]`); on the stop counts it
/// in the checkpoint at once and prints `TOLD <stops>`, then works on (the grace ends
/// first); prints `STEP <n>` after each step and `DONE attempt=<a> stops=<s>` at the end.
/// `sleep` is the runtime's timer.
pub async fn checkpointed_job<F>(
    mut job: Job<Vec<u8>>,
    sleep: impl Fn(Duration) -> F,
) -> Result<(), JobError>
where
    F: Future<Output = ()>,
{
    let (mut step, mut stops) = job
        .progress()
        .map_or((0, 0), |p| (p.as_bytes()[0], p.as_bytes()[1]));
    let mut stopping = job.stopping();
    let mut told = false;
    while step < STEPS {
        let stopped = if told {
            sleep(STEP).await;
            false
        } else {
            let work = std::pin::pin!(sleep(STEP));
            matches!(select(work, &mut stopping).await, Either::Right(_))
        };
        if stopped {
            told = true;
            stops += 1;
            job.checkpoint(vec![step, stops]).await?;
            println!("TOLD {stops}");
            continue;
        }
        step += 1;
        job.checkpoint(vec![step, stops]).await?;
        println!("STEP {step}");
    }
    println!("DONE attempt={} stops={stops}", job.attempt);
    Ok(())
}

/// Asserts what the child printed at stop number `stop`: its handler told of it, the pool
/// put the one item back.
pub fn assert_stopped(out: &[String], stop: u8) {
    assert!(
        out.contains(&format!("TOLD {stop}")),
        "stop {stop}: {out:?}"
    );
    assert!(
        out.contains(&"PUTBACK 1".to_string()),
        "stop {stop}: {out:?}"
    );
}

/// Asserts the checkpoint the item kept after stop number `stop`: the stops counted, the
/// job not done (the grace was shorter than the work).
pub fn assert_checkpoint(progress: &[u8], stop: u8) {
    assert_eq!(progress[1], stop, "the checkpoint counts the stops");
    assert!(
        progress[0] < STEPS,
        "stop {stop}: the grace was shorter than the work"
    );
}

/// Asserts that the last run finished the job on its first attempt, every stop counted.
pub fn assert_done(out: &[String]) {
    let done = format!("DONE attempt=1 stops={STOPS}");
    assert!(out.contains(&done), "{out:?}");
}
