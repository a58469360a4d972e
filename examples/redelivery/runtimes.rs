//! The rows on each runtime: tokio and smol, in virtual time and on real clocks.

use super::*;

// ----- runtimes --------------------------------------------------------------------------

/// Each row on a fresh current-thread tokio runtime whose clock starts paused.
pub(super) fn tokio_virtual(sc: &Arc<Scenario>) -> Vec<RowResult> {
    ROWS.iter()
        .map(|&row| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .expect("build a current-thread tokio runtime");
            runtime.block_on(async {
                let rt = TokioRuntime::new(tokio::runtime::Handle::current());
                run_row(rt, sc.clone(), row, Flavor::Tokio).await
            })
        })
        .collect()
}

/// Each row on a fresh `SimRuntime`: async-executor (smol's executor) on a virtual clock.
pub(super) fn smol_virtual(sc: &Arc<Scenario>) -> Vec<RowResult> {
    ROWS.iter()
        .map(|&row| {
            let sim = SimRuntime::new();
            sim.block_on(run_row(sim.clone(), sc.clone(), row, Flavor::Smol))
        })
        .collect()
}

/// All rows at once on one multi-thread tokio runtime, real time.
pub(super) fn tokio_real(sc: &Arc<Scenario>) -> Vec<RowResult> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("build a multi-thread tokio runtime");
    runtime.block_on(async {
        let rows = ROWS.iter().map(|&row| {
            let rt = TokioRuntime::new(tokio::runtime::Handle::current());
            run_row(rt, sc.clone(), row, Flavor::Tokio)
        });
        join_all(rows).await
    })
}

/// All rows at once on smol's global executor, real time.
pub(super) fn smol_real(sc: &Arc<Scenario>) -> Vec<RowResult> {
    smol::block_on(join_all(ROWS.iter().map(|&row| {
        run_row(SmolRuntime::global(), sc.clone(), row, Flavor::Smol)
    })))
}

/// The rows on tokio, then on smol, in real time, with their progress shown meanwhile.
pub(super) fn real_time(sc: &Arc<Scenario>) -> [Vec<RowResult>; 2] {
    let progress = Progress::start();
    let total = 2 * ROWS.len();
    let cut = sc.cut.as_secs_f64();
    let phase = |name: &'static str| {
        let started = Instant::now();
        let calls_before = CALLS_FINISHED.load(Ordering::Relaxed);
        progress.set(move || {
            format!(
                "{name}: {:.1} s into the {cut:.0} s rows; {} of {total} rows done; {} handler \
                 calls finished on this runtime",
                started.elapsed().as_secs_f64(),
                ROWS_DONE.load(Ordering::Relaxed),
                CALLS_FINISHED.load(Ordering::Relaxed) - calls_before,
            )
        });
    };
    phase("tokio (real time)");
    let tokio = tokio_real(sc);
    phase("smol (real time)");
    let smol = smol_real(sc);
    progress.finish();
    [tokio, smol]
}
