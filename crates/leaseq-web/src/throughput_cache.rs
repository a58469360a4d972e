//! The charts' numbers as page loads read them ([`Charts`]): each queue's last hour as last
//! read ([`Throughput`]), served at once and read again in the background once older than
//! [`FRESH`] (one refresh at a time), so that a page load reads the store's record only
//! for a queue it has never read (the overview of 100 queues pays the record's reads on its
//! first load, not on each).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::operator::{Operator, OperatorError};
use crate::throughput::{Minutes, Throughput};

/// How long a queue's numbers are served without a new read.
pub(crate) const FRESH: Duration = Duration::from_secs(5);

/// What the dashboard has read of the queues' records, and the numbers last read.
#[derive(Debug, Default)]
pub(crate) struct Charts {
    reader: Throughput,
    /// Per queue: when its numbers were read, and they.
    last: Mutex<HashMap<String, (Instant, Minutes)>>,
    /// Whether a background refresh runs.
    refreshing: AtomicBool,
}

/// What [`last_hour`] reads through: the dashboard's operator and its [`Charts`] (the
/// dashboard's state implements it, so that this module does not depend on the layout).
pub(crate) trait ChartSource: Send + Sync + 'static {
    /// The operator the record is read through.
    type Op: Operator;
    /// The operator.
    fn op(&self) -> &Self::Op;
    /// The numbers read so far.
    fn charts(&self) -> &Charts;
}

/// Clears [`Charts::refreshing`] when the refresh ends, however it ends.
struct Refreshing<A: ChartSource>(Arc<A>);

impl<A: ChartSource> Drop for Refreshing<A> {
    fn drop(&mut self) {
        self.0.charts().refreshing.store(false, Ordering::Release);
    }
}

/// The last hour of `queues` added up, as of `now`: numbers read before served as they are
/// (a refresh of the stale ones started in the background), a queue never read read now.
pub(crate) async fn last_hour<A: ChartSource>(
    app: &Arc<A>,
    queues: &[String],
    now: SystemTime,
) -> Result<Minutes, OperatorError> {
    let charts = app.charts();
    let mut all = Minutes::empty(now);
    let (mut unread, mut stale) = (Vec::new(), Vec::new());
    {
        let last = charts.last.lock().unwrap_or_else(|p| p.into_inner());
        for q in queues {
            match last.get(q) {
                Some((at, m)) => {
                    all.add(&m.aligned(all.first));
                    if at.elapsed() >= FRESH || m.partial {
                        stale.push(q.clone());
                    }
                }
                None => unread.push(q),
            }
        }
    }
    for q in unread {
        let m = charts.reader.minutes(app.op(), q, now).await?;
        all.add(&m.aligned(all.first));
        charts
            .last
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(q.clone(), (Instant::now(), m));
    }
    if !stale.is_empty() && !charts.refreshing.swap(true, Ordering::AcqRel) {
        let guard = Refreshing(Arc::clone(app));
        tokio::spawn(async move {
            let app = &guard.0;
            for q in stale {
                match app
                    .charts()
                    .reader
                    .minutes(app.op(), &q, SystemTime::now())
                    .await
                {
                    Ok(m) => {
                        let mut last = app.charts().last.lock().unwrap_or_else(|p| p.into_inner());
                        last.insert(q, (Instant::now(), m));
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "leaseq-web: reading the record of finished jobs failed");
                        break;
                    }
                }
            }
        });
    }
    Ok(all)
}
