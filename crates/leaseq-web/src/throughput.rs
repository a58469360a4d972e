//! Finished jobs per minute and outcome over the last hour, read from the store's record of
//! finished jobs ([`Operator::history`]) and kept by the dashboard between page loads
//! ([`Throughput`]): each queue's entries are read once, from a cursor that only moves
//! forward, so a page load reads the entries written since the last one (at most
//! [`MAX_PAGES`] pages of [`PAGE`]; the rest on the next load, the chart marked partial).
//!
//! The first read of a queue finds the hour's first entry by a search on the entry numbers
//! (one-entry reads, about twice the log of the record's length), as entries are numbered in
//! the order they finished (within a commit's overlap, which a minute's bucket absorbs).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, SystemTime};

use leaseq_async::{FinishOutcome, Finished, HistoryQuery};

use crate::operator::{Operator, OperatorError};

/// Minutes a chart shows: the current one and the 59 before.
pub(crate) const WINDOW: u64 = 60;
/// Entries read a call.
const PAGE: usize = 500;
/// Calls a queue's update makes at most in one page load.
const MAX_PAGES: usize = 20;

/// The counts of one minute, by [`FinishOutcome::code`].
pub(crate) type Counts = [u64; 4];

/// The finished jobs of the last [`WINDOW`] minutes, oldest minute first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Minutes {
    /// The first minute, in minutes since the Unix epoch.
    pub(crate) first: u64,
    /// Per minute, from `first` on, counts by outcome code.
    pub(crate) counts: Vec<Counts>,
    /// Whether some entries of the hour were not read yet (the next load reads on).
    pub(crate) partial: bool,
}

impl Minutes {
    /// No entry in the window that ends with `now`'s minute.
    pub(crate) fn empty(now: SystemTime) -> Minutes {
        let last = minute(now);
        Minutes {
            first: last.saturating_sub(WINDOW - 1),
            counts: vec![[0; 4]; WINDOW as usize],
            partial: false,
        }
    }

    /// Adds `other`'s counts (of the same window) to these.
    pub(crate) fn add(&mut self, other: &Minutes) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
        self.partial |= other.partial;
    }

    /// These counts in the window that starts at minute `first` (minutes before it dropped,
    /// minutes after these empty).
    pub(crate) fn aligned(&self, first: u64) -> Minutes {
        let mut out = Minutes {
            first,
            counts: vec![[0; 4]; WINDOW as usize],
            partial: self.partial,
        };
        for (i, c) in self.counts.iter().enumerate() {
            let m = self.first + i as u64;
            if let Some(slot) = m
                .checked_sub(first)
                .and_then(|at| out.counts.get_mut(at as usize))
            {
                *slot = *c;
            }
        }
        out
    }

    /// Entries of every minute with `outcome`.
    pub(crate) fn total(&self, outcome: FinishOutcome) -> u64 {
        let i = usize::from(outcome.code());
        self.counts.iter().map(|c| c[i]).sum()
    }
}

/// Minutes since the Unix epoch at `t` (0 before it).
pub(crate) fn minute(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 60)
}

/// What the dashboard has read of one queue's record.
#[derive(Debug, Default)]
struct Tail {
    /// Entries numbered up to this one are counted or older than the window (`None`: from
    /// the oldest).
    cursor: Option<u64>,
    /// Whether the cursor was placed for the window (by the search).
    placed: bool,
    /// Counts by minute since the Unix epoch.
    by_minute: BTreeMap<u64, Counts>,
}

/// Every queue's counts read so far, for the pages of one dashboard.
#[derive(Debug, Default)]
pub(crate) struct Throughput {
    tails: tokio::sync::Mutex<HashMap<String, Tail>>,
}

impl Throughput {
    /// `queue`'s finished jobs per minute of the hour up to `now`, read on from where the
    /// last call stopped.
    pub(crate) async fn minutes<O: Operator>(
        &self,
        op: &O,
        queue: &str,
        now: SystemTime,
    ) -> Result<Minutes, OperatorError> {
        let mut out = Minutes::empty(now);
        let since = SystemTime::UNIX_EPOCH + Duration::from_secs(out.first * 60);
        let mut tails = self.tails.lock().await;
        let tail = tails.entry(queue.to_string()).or_default();
        // (A record found empty by the search is not read again in this load.)
        let mut reads = 0..MAX_PAGES + 1;
        if !tail.placed {
            match start(op, queue, since).await? {
                Some(cursor) => tail.cursor = cursor,
                None => reads = 0..0,
            }
            tail.placed = true;
        }
        let mut newest = None;
        for read in reads {
            if read == MAX_PAGES {
                out.partial = true;
                break;
            }
            let mut query = HistoryQuery::first(PAGE);
            query.after = tail.cursor;
            let page = op.history(queue, &query).await?;
            for e in &page {
                tail.cursor = Some(e.seq);
                newest = Some(e.finished_at);
                if e.finished_at >= since {
                    let m = minute(e.finished_at).min(out.first + WINDOW - 1);
                    tail.by_minute.entry(m).or_default()[usize::from(e.outcome.code())] += 1;
                }
            }
            if page.len() < PAGE {
                break;
            }
        }
        // Far behind (the newest read is older than the window): search again next time.
        if out.partial && newest.is_some_and(|t| t < since) {
            tail.placed = false;
        }
        tail.by_minute = tail.by_minute.split_off(&out.first);
        for (m, c) in &tail.by_minute {
            if let Some(slot) = out.counts.get_mut((m - out.first) as usize) {
                *slot = *c;
            }
        }
        Ok(out)
    }
}

/// The cursor before `queue`'s first entry that finished at `since` or later (`Some(None)`:
/// from the oldest; `None`: the record has no entry).
async fn start<O: Operator>(
    op: &O,
    queue: &str,
    since: SystemTime,
) -> Result<Option<Option<u64>>, OperatorError> {
    // The first entry numbered above `after`.
    let probe = |after: Option<u64>| async move {
        let mut q = HistoryQuery::first(1);
        q.after = after;
        Ok::<Option<Finished>, OperatorError>(op.history(queue, &q).await?.into_iter().next())
    };
    let Some(first) = probe(None).await? else {
        return Ok(None);
    };
    if first.finished_at >= since {
        return Ok(Some(None));
    }
    // Every entry up to `lo` is older than `since`; the first one after `hi` is not (or
    // there is none).
    let mut lo = first.seq;
    let mut step = 1_u64;
    let mut hi = loop {
        let at = lo.saturating_add(step);
        match probe(Some(at)).await? {
            Some(e) if e.finished_at < since && at < u64::MAX => {
                lo = e.seq;
                step = step.saturating_mul(2);
            }
            _ => break at,
        }
    };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match probe(Some(mid)).await? {
            // (An old entry after `mid` is at or before `hi`: the first after `hi` is new.)
            Some(e) if e.finished_at < since => lo = e.seq.min(hi),
            _ => hi = mid,
        }
    }
    Ok(Some(Some(lo)))
}

#[cfg(test)]
#[path = "throughput_tests.rs"]
mod tests;
