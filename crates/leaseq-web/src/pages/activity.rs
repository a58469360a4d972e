//! The last hour's throughput and failure rate, as the overview (every queue) and a queue's
//! page show them: read from the store's record of finished jobs, or a note saying why
//! there is no chart.

use std::sync::Arc;
use std::time::SystemTime;

use leaseq_async::FinishOutcome;

use crate::chart_time;
use crate::html::Html;
use crate::layout::App;
use crate::operator::{Operator, OperatorError};

/// The section for `queues` (their counts added up), under a heading.
pub(crate) async fn section<O: Operator>(
    app: &Arc<App<O>>,
    h: &mut Html,
    queues: &[String],
) -> Result<(), OperatorError> {
    h.raw("<section id=\"activity\"><h2>Last hour</h2>");
    if !app.op.capabilities().history {
        h.raw("<p class=\"muted\" id=\"no-activity\">No throughput chart: this store keeps no record of finished jobs.</p></section>");
        return Ok(());
    }
    let all = crate::throughput_cache::last_hour(app, queues, SystemTime::now()).await?;
    let finished: u64 = FinishOutcome::ALL.iter().map(|o| all.total(*o)).sum();
    if finished == 0 {
        h.raw("<p class=\"muted\" id=\"no-activity\">No job finished in the last hour (a store records finished jobs only when opened with a retention window).</p></section>");
        return Ok(());
    }
    h.raw("<p class=\"legend\">");
    for o in FinishOutcome::ALL {
        h.raw("<span class=\"key ")
            .text(o.as_str())
            .raw("\"></span> ")
            .text(o.as_str())
            .raw(" <b data-total=\"")
            .text(o.as_str())
            .raw("\">")
            .show(all.total(o))
            .raw("</b> ");
    }
    h.raw("</p><h3>Finished per minute</h3>");
    chart_time::throughput(h, &all);
    h.raw("<h3>Failure rate (dead-lettered or expired, of finished)</h3>");
    chart_time::failure_rate(h, &all);
    if all.partial {
        h.raw("<p class=\"muted\" id=\"partial\">Some of the hour's entries are still to be read: reload for the rest.</p>");
    }
    h.raw("<p class=\"muted\">From the store's record of finished jobs, read again at most every few seconds; minutes in UTC.</p></section>");
    Ok(())
}
